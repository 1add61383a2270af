#include "agents/reply_template.h"

#include <stdexcept>

namespace turnrl::agents {
namespace {

constexpr std::string_view kAction = "{action}";
constexpr std::string_view kAim = "{aim}";

void replace_all(std::string& text, std::string_view placeholder, std::string_view value) {
  for (size_t at = text.find(placeholder); at != std::string::npos; at = text.find(placeholder, at + value.size())) {
    text.replace(at, placeholder.size(), value);
  }
}

}  // namespace

bool asks_for_aim(std::string_view text) { return text.find(kAim) != std::string_view::npos; }

ReplyTemplate::ReplyTemplate(std::string text) : text_(std::move(text)) {
  if (text_.find(kAction) == std::string::npos) throw std::invalid_argument("reply template '" + text_ + "' has no {action}");
}

std::string ReplyTemplate::fill(std::string_view action, std::string_view aim) const {
  std::string reply = text_;
  replace_all(reply, kAim, aim);
  replace_all(reply, kAction, action);
  const size_t first = reply.find_first_not_of(' ');
  return first == std::string::npos ? "" : reply.substr(first, reply.find_last_not_of(' ') - first + 1);
}

}  // namespace turnrl::agents
