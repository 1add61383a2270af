// Fuzzes the env-server wire format with arbitrary payloads, from both ends. Server side:
// decode_request accepts a request or raises ProtocolError, and an accepted request survives
// encode_request and decoding again unchanged. Client side: decode_reply and the reply body
// decoders accept a reply or raise ServerError. Anything else is a finding.
#include <string>
#include <string_view>

#include "envs/server/protocol.h"
#include "fuzz_util.h"

using namespace turnrl::envs::server;
using turnrl::fuzz::check;

namespace {

constexpr int kSlots = 4;

void check_request(std::string_view payload) {
  Request request;
  try {
    request = decode_request(payload, kSlots);
  } catch (const ProtocolError&) {
    return;
  }
  const std::string encoded = encode_request(request);
  const std::string again = encode_request(decode_request(encoded, kSlots));
  check(again == encoded, "a decoded request encodes and decodes to itself");
}

/** The reply as each reply type the client decodes a body of. */
void check_reply(std::string_view payload) {
  const uint64_t id = request_id_of(payload);
  for (std::string_view type : {"create", "reset", "step", "golden_script"}) {
    try {
      const std::optional<nlohmann::json> body = decode_reply(payload, type, id);
      if (!body) continue;
      if (type == "create") decode_slot_infos(*body);
      if (type == "reset") decode_episode_starts(*body);
      if (type == "step") decode_step_outcomes(*body);
      if (type == "golden_script") decode_script(*body);
    } catch (const ServerError&) {
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view payload(reinterpret_cast<const char*>(data), size);
  check_request(payload);
  check_reply(payload);
  return 0;
}
