#include "agents/reply_template.h"

#include <stdexcept>

namespace turnrl::agents {
namespace {
constexpr std::string_view kPlaceholder = "{action}";
}  // namespace

ReplyTemplate::ReplyTemplate(std::string text) : text_(std::move(text)) {
  if (text_.find(kPlaceholder) == std::string::npos) throw std::invalid_argument("reply template '" + text_ + "' has no {action}");
}

std::string ReplyTemplate::fill(std::string_view action) const {
  std::string reply = text_;
  for (size_t at = reply.find(kPlaceholder); at != std::string::npos; at = reply.find(kPlaceholder, at + action.size())) {
    reply.replace(at, kPlaceholder.size(), action);
  }
  return reply;
}

}  // namespace turnrl::agents
