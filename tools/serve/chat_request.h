#pragma once
// The body of POST /v1/chat/completions, parsed and validated into a typed request (torch-free, so
// that its unit test runs in every build).
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "memory/chat_message.h"

namespace turnrl::serve {

/** A validated /v1/chat/completions body. Unknown fields are ignored. */
struct ChatRequest {
  std::vector<memory::ChatMessage> messages;  // roles system, user, assistant ("developer" read as system)
  std::optional<int> max_tokens;  // max_completion_tokens or max_tokens; absent: the rest of the context
  double temperature = 1.0;       // 0: greedy
  double top_p = 1.0;
  std::optional<uint64_t> seed;   // choice i samples from seed + i * 0x9E3779B97F4A7C15
  std::vector<std::string> stop;
  int n = 1;
  bool stream = false;
  bool include_usage = false;     // stream_options.include_usage
};

/** Throws ApiError (400) with a message naming the field, or saying the body is not JSON. */
ChatRequest parse_chat_request(std::string_view body, int max_choices);

}  // namespace turnrl::serve
