#pragma once
#include <string>

namespace turnrl::memory {

/** One message of an OpenAI-style chat: role is "system", "user" or "assistant". */
struct ChatMessage {
  std::string role;
  std::string content;
};

}  // namespace turnrl::memory
