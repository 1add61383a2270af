#pragma once
// The reply a scripted agent writes around its action ("ACTION: {action}"), shared by the random
// and the expert agent so that both write format data the same way. "{aim}" writes what the
// expert heads for before its action ("{aim} ACTION: {action}"): reasoning a model can copy from
// the observation, one line of it, rather than find the line and act on it in one token.
#include <string>
#include <string_view>

namespace turnrl::agents {

/** Whether `text` asks for the expert's aim ("{aim}"): only the expert agent has one to write. */
bool asks_for_aim(std::string_view text);

class ReplyTemplate {
 public:
  /** std::invalid_argument when `text` has no "{action}". */
  explicit ReplyTemplate(std::string text);
  /** The template with every "{action}" replaced by `action` and every "{aim}" by `aim`, less
   *  the spaces an empty aim leaves at either end. */
  std::string fill(std::string_view action, std::string_view aim = "") const;

 private:
  std::string text_;
};

}  // namespace turnrl::agents
