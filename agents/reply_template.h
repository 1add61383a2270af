#pragma once
// The reply a scripted agent writes around its action ("ACTION: {action}"), shared by the random
// and the expert agent so that both write format data the same way.
#include <string>
#include <string_view>

namespace turnrl::agents {

class ReplyTemplate {
 public:
  /** std::invalid_argument when `text` has no "{action}". */
  explicit ReplyTemplate(std::string text);
  /** The template with every "{action}" replaced by `action`. */
  std::string fill(std::string_view action) const;

 private:
  std::string text_;
};

}  // namespace turnrl::agents
