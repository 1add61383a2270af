#pragma once
// The env server's wire format (docs/env_protocol.md): one JSON message per ZeroMQ frame.
// Every request and reply is encoded, decoded and validated here and nowhere else.
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

#include "envs/env.h"
#include "envs/golden.h"

namespace turnrl::envs::server {

/** The versions this build speaks; `hello` picks the highest one both sides speak. */
constexpr int kProtocolVersion = 1;

/** A request the server rejects; the message goes back in an error reply. */
class ProtocolError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/** An error reply from the server, or a reply the client cannot read. */
class ServerError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/** No reply at all: the server is dead, hung or out of reach (or the client was disconnected). */
class ServerUnreachable : public ServerError {
 public:
  using ServerError::ServerError;
};

struct HelloRequest {
  std::vector<int> versions;
};
struct PingRequest {};
struct CreateItem {
  std::optional<int> slot;  // nullopt: the server picks a free slot
  std::string env_id;
  nlohmann::json options = nlohmann::json::object();
};
struct CreateRequest {
  std::vector<CreateItem> items;
};
struct ResetItem {
  int slot = 0;
  uint64_t seed = 0;
};
struct ResetRequest {
  std::vector<ResetItem> items;
};
struct StepItem {
  int slot = 0;
  int action = 0;
};
struct StepRequest {
  std::vector<StepItem> items;
};
struct CloseRequest {
  std::vector<int> slots;
};
struct RenderRequest {
  int slot = 0;
};
/** The slot env's Env::serialize_state(), hex-encoded (GiGPO's anchor states over remote envs). */
struct StateRequest {
  int slot = 0;
};
/** Golden records to translate into Env API traffic (envs::env_api_script). */
struct GoldenScriptRequest {
  std::vector<nlohmann::json> records;
};

using RequestBody = std::variant<HelloRequest, PingRequest, CreateRequest, ResetRequest, StepRequest, CloseRequest,
                                 RenderRequest, StateRequest, GoldenScriptRequest>;

struct Request {
  uint64_t id = 0;  // chosen by the client, echoed in the reply (matches replies to requests)
  RequestBody body;
};

std::string encode_request(const Request& request);
/** Checks everything that needs no slot state: JSON shape, field types, known fields, slots in
 *  [0, num_slots), batches of 1..num_slots items with no slot twice. Throws ProtocolError. */
Request decode_request(std::string_view payload, int num_slots);
/** The id of a payload that failed to decode, when one can be read (0 otherwise). */
uint64_t request_id_of(std::string_view payload);

/** What a created slot offers for its whole life. */
struct SlotInfo {
  int slot = 0;
  std::string env_id;
  std::vector<ActionSpec> actions;
  int default_action = 0;
  ActionTextRules text_rules;
};
/** What a reset returns. */
struct EpisodeStart {
  int slot = 0;
  TextObservation observation;
  std::string instruction_prompt;
  std::string goal;
  int max_steps = 0;
  double progression = 0.0;
  std::string reference_answer;  // Env::reference_answer() (absent from the reply when empty)
};
/** What a step returns. */
struct StepOutcome {
  int slot = 0;
  StepResult result;
  TextObservation observation;
  double progression = 0.0;
  std::string reference_answer;  // Env::reference_answer() (absent from the reply when empty)
};

// Server side: reply bodies (objects) and their envelope.
nlohmann::json slot_info_json(int slot, const Env& env);
/** What the reset and step replies carry, as envs::episode_outputs / step_outputs define it. */
nlohmann::json episode_start_json(int slot, const Env& env);
nlohmann::json step_outcome_json(int slot, const Env& env, const StepResult& result);
EpisodeStart episode_start(int slot, const Env& env);
StepOutcome step_outcome(int slot, const Env& env, const StepResult& result);
/** The whole reset or step reply, written straight to text: the bytes encode_reply makes of
 *  {"results": [episode_start_json or step_outcome_json...]}, without building a document, which
 *  was the server's largest cost per step at large batches. */
std::string encode_reset_reply(uint64_t id, const std::vector<EpisodeStart>& starts);
std::string encode_step_reply(uint64_t id, const std::vector<StepOutcome>& outcomes);
nlohmann::json script_json(const EnvApiScript& script);
/** `body` with "type" and "id" added. */
std::string encode_reply(std::string_view type, uint64_t id, nlohmann::json body);
std::string encode_error(uint64_t id, std::string_view message);

// Client side: throw ServerError for error replies and for replies of the wrong shape.
/** The body of the reply to request `id` of type `type`; nullopt for a reply to another request
 *  (a late reply to one that timed out). */
std::optional<nlohmann::json> decode_reply(std::string_view payload, std::string_view type, uint64_t id);
std::vector<SlotInfo> decode_slot_infos(const nlohmann::json& body);
std::vector<EpisodeStart> decode_episode_starts(const nlohmann::json& body);
std::vector<StepOutcome> decode_step_outcomes(const nlohmann::json& body);
EnvApiScript decode_script(const nlohmann::json& body);

/** The reply type of each request type ("pong" for "ping", the request's own name otherwise). */
std::string_view request_type(const RequestBody& body);
std::string_view reply_type(const RequestBody& body);

}  // namespace turnrl::envs::server
