#include "envs/server/protocol.h"

#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <set>

#include "envs/common/json_integer.h"
#include "envs/env_outputs.h"

namespace turnrl::envs::server {
namespace {

using nlohmann::json;

// The request types, in RequestBody's order.
constexpr std::string_view kRequestTypes[] = {"hello", "ping", "create", "reset", "step", "close", "render",
                                              "state", "golden_script"};
static_assert(std::size(kRequestTypes) == std::variant_size_v<RequestBody>);

// --- Reading requests (server side): every problem is a ProtocolError naming the field. ---

const json& field(const json& object, const char* key, const std::string& where) {
  const auto found = object.find(key);
  if (found == object.end()) throw ProtocolError(where + ": missing field '" + key + "'");
  return *found;
}

void check_known_fields(const json& object, std::initializer_list<std::string_view> known, const std::string& where) {
  for (const auto& [key, value] : object.items()) {
    if (std::find(known.begin(), known.end(), key) == known.end()) {
      throw ProtocolError(where + ": unknown field '" + key + "'");
    }
  }
}

int64_t int_field(const json& object, const char* key, int64_t min, int64_t max, const std::string& where) {
  // min <= max, both within int64; unsigned JSON values may exceed int64, so compare them apart.
  const json& value = field(object, key, where);
  bool in_range = false;
  if (value.is_number_unsigned()) {
    in_range = max >= 0 && value.get<uint64_t>() <= static_cast<uint64_t>(max) &&
               static_cast<int64_t>(value.get<uint64_t>()) >= min;
  } else if (value.is_number_integer()) {
    in_range = value.get<int64_t>() >= min && value.get<int64_t>() <= max;
  }
  if (!in_range) {
    throw ProtocolError(where + ": field '" + key + "' must be an integer in [" + std::to_string(min) + ", " +
                        std::to_string(max) + "], got " + value.dump());
  }
  return value.get<int64_t>();
}

uint64_t seed_field(const json& object, const std::string& where) {
  const json& value = field(object, "seed", where);
  if (!value.is_number_unsigned()) {
    throw ProtocolError(where + ": field 'seed' must be a non-negative 64-bit integer, got " + value.dump());
  }
  return value.get<uint64_t>();
}

std::string string_field(const json& object, const char* key, const std::string& where) {
  const json& value = field(object, key, where);
  if (!value.is_string()) throw ProtocolError(where + ": field '" + key + "' must be a string, got " + value.dump());
  return value.get<std::string>();
}

const json& array_field(const json& object, const char* key, size_t max_size, const std::string& where) {
  const json& value = field(object, key, where);
  if (!value.is_array() || value.empty()) {
    throw ProtocolError(where + ": field '" + key + "' must be a non-empty array");
  }
  if (value.size() > max_size) {
    throw ProtocolError(where + ": batch of " + std::to_string(value.size()) + " items exceeds the limit of " +
                        std::to_string(max_size));
  }
  return value;
}

int slot_field(const json& object, int num_slots, const std::string& where) {
  return static_cast<int>(int_field(object, "slot", 0, num_slots - 1, where));
}

/** Each item of a batch is an object; `read` decodes it. */
template <typename Item, typename Read>
std::vector<Item> read_items(const json& message, int num_slots, const std::string& where, Read read) {
  std::vector<Item> items;
  const json& array = array_field(message, "items", static_cast<size_t>(num_slots), where);
  for (size_t i = 0; i < array.size(); ++i) {
    const std::string item_where = where + " items[" + std::to_string(i) + "]";
    if (!array[i].is_object()) throw ProtocolError(item_where + ": must be an object");
    items.push_back(read(array[i], item_where));
  }
  return items;
}

void check_distinct(std::vector<int> slots, const std::string& where) {
  std::sort(slots.begin(), slots.end());
  const auto twice = std::adjacent_find(slots.begin(), slots.end());
  if (twice != slots.end()) throw ProtocolError(where + ": slot " + std::to_string(*twice) + " appears twice");
}

template <typename Item>
void check_distinct_items(const std::vector<Item>& items, const std::string& where) {
  std::vector<int> slots;
  for (const Item& item : items) slots.push_back(item.slot);
  check_distinct(std::move(slots), where);
}

RequestBody decode_body(const json& message, std::string_view type, int num_slots) {
  const std::string where(type);
  if (type == "hello") {
    check_known_fields(message, {"type", "id", "versions"}, where);
    HelloRequest hello;
    const json& versions = array_field(message, "versions", 64, where);
    for (const json& version : versions) {
      hello.versions.push_back(static_cast<int>(int_field(json{{"version", version}}, "version", INT32_MIN, INT32_MAX, where)));
    }
    return hello;
  }
  if (type == "ping") {
    check_known_fields(message, {"type", "id"}, where);
    return PingRequest{};
  }
  if (type == "create") {
    check_known_fields(message, {"type", "id", "items"}, where);
    CreateRequest create{read_items<CreateItem>(message, num_slots, where, [&](const json& item, const std::string& at) {
      check_known_fields(item, {"slot", "env_id", "options"}, at);
      CreateItem out;
      if (item.contains("slot")) out.slot = slot_field(item, num_slots, at);
      out.env_id = string_field(item, "env_id", at);
      if (item.contains("options")) {
        if (!item["options"].is_object()) throw ProtocolError(at + ": field 'options' must be an object");
        out.options = item["options"];
      }
      return out;
    })};
    std::vector<int> slots;
    for (const CreateItem& item : create.items) {
      if (item.slot) slots.push_back(*item.slot);
    }
    check_distinct(std::move(slots), where);
    return create;
  }
  if (type == "reset") {
    check_known_fields(message, {"type", "id", "items"}, where);
    ResetRequest reset{read_items<ResetItem>(message, num_slots, where, [&](const json& item, const std::string& at) {
      check_known_fields(item, {"slot", "seed"}, at);
      return ResetItem{slot_field(item, num_slots, at), seed_field(item, at)};
    })};
    check_distinct_items(reset.items, where);
    return reset;
  }
  if (type == "step") {
    check_known_fields(message, {"type", "id", "items"}, where);
    StepRequest step{read_items<StepItem>(message, num_slots, where, [&](const json& item, const std::string& at) {
      check_known_fields(item, {"slot", "action"}, at);
      return StepItem{slot_field(item, num_slots, at), static_cast<int>(int_field(item, "action", 0, INT32_MAX, at))};
    })};
    check_distinct_items(step.items, where);
    return step;
  }
  if (type == "close") {
    check_known_fields(message, {"type", "id", "slots"}, where);
    CloseRequest close;
    for (const json& slot : array_field(message, "slots", static_cast<size_t>(num_slots), where)) {
      close.slots.push_back(slot_field(json{{"slot", slot}}, num_slots, where));
    }
    check_distinct(close.slots, where);
    return close;
  }
  if (type == "render") {
    check_known_fields(message, {"type", "id", "slot"}, where);
    return RenderRequest{slot_field(message, num_slots, where)};
  }
  if (type == "state") {
    check_known_fields(message, {"type", "id", "slot"}, where);
    return StateRequest{slot_field(message, num_slots, where)};
  }
  if (type == "golden_script") {
    check_known_fields(message, {"type", "id", "records"}, where);
    GoldenScriptRequest script;
    for (const json& record : array_field(message, "records", SIZE_MAX, where)) {
      if (!record.is_object()) throw ProtocolError("golden_script: every record must be an object");
      script.records.push_back(record);
    }
    return script;
  }
  std::string known;
  for (std::string_view name : kRequestTypes) known += (known.empty() ? "" : ", ") + std::string(name);
  throw ProtocolError("unknown message type '" + std::string(type) + "' (known: " + known + ")");
}

json request_fields(const RequestBody& body) {
  struct Encoder {
    json operator()(const HelloRequest& r) const { return {{"versions", r.versions}}; }
    json operator()(const PingRequest&) const { return json::object(); }
    json operator()(const CreateRequest& r) const {
      json items = json::array();
      for (const CreateItem& item : r.items) {
        json encoded = {{"env_id", item.env_id}, {"options", item.options}};
        if (item.slot) encoded["slot"] = *item.slot;
        items.push_back(std::move(encoded));
      }
      return {{"items", std::move(items)}};
    }
    json operator()(const ResetRequest& r) const {
      json items = json::array();
      for (const ResetItem& item : r.items) items.push_back({{"slot", item.slot}, {"seed", item.seed}});
      return {{"items", std::move(items)}};
    }
    json operator()(const StepRequest& r) const {
      json items = json::array();
      for (const StepItem& item : r.items) items.push_back({{"slot", item.slot}, {"action", item.action}});
      return {{"items", std::move(items)}};
    }
    json operator()(const CloseRequest& r) const { return {{"slots", r.slots}}; }
    json operator()(const RenderRequest& r) const { return {{"slot", r.slot}}; }
    json operator()(const StateRequest& r) const { return {{"slot", r.slot}}; }
    json operator()(const GoldenScriptRequest& r) const { return {{"records", r.records}}; }
  };
  return std::visit(Encoder{}, body);
}

// --- Reading replies (client side): a reply of the wrong shape is a ServerError. ---

template <typename Read>
auto read_reply(const char* what, Read read) -> decltype(read()) {
  try {
    return read();
  } catch (const json::exception& e) {
    throw ServerError(std::string("malformed ") + what + " reply: " + e.what());
  } catch (const std::out_of_range& e) {
    throw ServerError(std::string("malformed ") + what + " reply: " + e.what());
  }
}

json text_rules_json(const ActionTextRules& rules) {
  return {{"letter_case", rules.letter_case == ActionTextRules::Case::kLower ? "lower" : "title"},
          {"underscores_to_spaces", rules.underscores_to_spaces},
          {"cut_at_newline", rules.cut_at_newline},
          {"drop_trailing_punctuation", rules.drop_trailing_punctuation},
          {"translations", rules.translations},
          {"drop_parenthesised_after", rules.drop_parenthesised_after}};
}

ActionTextRules text_rules_from_json(const json& encoded) {
  ActionTextRules rules;
  const std::string letter_case = encoded.at("letter_case").get<std::string>();
  if (letter_case != "lower" && letter_case != "title") throw ServerError("unknown letter_case '" + letter_case + "'");
  rules.letter_case = letter_case == "lower" ? ActionTextRules::Case::kLower : ActionTextRules::Case::kTitle;
  rules.underscores_to_spaces = encoded.at("underscores_to_spaces").get<bool>();
  rules.cut_at_newline = encoded.at("cut_at_newline").get<bool>();
  rules.drop_trailing_punctuation = encoded.at("drop_trailing_punctuation").get<bool>();
  rules.translations = encoded.at("translations").get<std::map<std::string, std::vector<std::string>>>();
  rules.drop_parenthesised_after = encoded.at("drop_parenthesised_after").get<std::string>();
  return rules;
}

}  // namespace

std::string_view request_type(const RequestBody& body) { return kRequestTypes[body.index()]; }

std::string_view reply_type(const RequestBody& body) {
  return std::holds_alternative<PingRequest>(body) ? "pong" : request_type(body);
}

std::string encode_request(const Request& request) {
  json message = request_fields(request.body);
  message["type"] = request_type(request.body);
  message["id"] = request.id;
  return message.dump();
}

Request decode_request(std::string_view payload, int num_slots) {
  const json message = json::parse(payload, nullptr, /*allow_exceptions=*/false);
  if (message.is_discarded()) throw ProtocolError("the message is not valid JSON");
  if (!message.is_object()) throw ProtocolError("a message must be a JSON object");
  const std::string type = string_field(message, "type", "message");
  Request request;
  if (message.contains("id")) {
    if (!message["id"].is_number_unsigned()) throw ProtocolError(type + ": field 'id' must be a non-negative integer");
    request.id = message["id"].get<uint64_t>();
  }
  request.body = decode_body(message, type, num_slots);
  return request;
}

uint64_t request_id_of(std::string_view payload) {
  const json message = json::parse(payload, nullptr, /*allow_exceptions=*/false);
  if (message.is_object() && message.contains("id") && message["id"].is_number_unsigned()) {
    return message["id"].get<uint64_t>();
  }
  return 0;
}

json slot_info_json(int slot, const Env& env) {
  json actions = json::array();
  for (const ActionSpec& action : env.actions()) {
    actions.push_back({{"name", action.name}, {"description", action.description}});
  }
  return {{"slot", slot},
          {"env_id", env.id()},
          {"actions", std::move(actions)},
          {"default_action", env.default_action()},
          {"text_rules", text_rules_json(env.text_rules())}};
}

json episode_start_json(int slot, const Env& env) {
  json body = episode_outputs(env);
  body["slot"] = slot;
  return body;
}

json step_outcome_json(int slot, const Env& env, const StepResult& result) {
  json body = step_outputs(env, result);
  body["slot"] = slot;
  return body;
}

json script_json(const EnvApiScript& script) {
  json lines = json::array();
  for (const EnvApiLine& line : script.lines) {
    if (line.is_reset) {
      lines.push_back({{"reset", {{"env_id", line.env_id}, {"options", line.options}, {"seed", line.seed}}},
                       {"expected", line.expected}});
    } else {
      lines.push_back({{"action", line.action}, {"expected", line.expected}});
    }
  }
  return {{"golden_lines", script.golden_lines}, {"lines", std::move(lines)}};
}

EpisodeStart episode_start(int slot, const Env& env) {
  return {slot, env.observe_text(), env.instruction_prompt(), env.goal(), env.max_steps(), env.progression(),
          env.reference_answer()};
}

StepOutcome step_outcome(int slot, const Env& env, const StepResult& result) {
  return {slot, result, env.observe_text(), env.progression(), env.reference_answer()};
}

namespace {

// --- Writing reset and step replies as text: nlohmann's dump() byte for byte (keys sorted as its
// std::map sorts them, strings and numbers written as it writes them), so clients see no difference. ---

bool is_valid_utf8(std::string_view text) {
  size_t i = 0;
  while (i < text.size()) {
    const auto byte = static_cast<unsigned char>(text[i]);
    if (byte < 0x80) {
      ++i;
      continue;
    }
    // Lead byte: sequence length and the range of its second byte (no overlongs, surrogates, > U+10FFFF).
    size_t length = 0;
    unsigned char low = 0x80, high = 0xBF;
    if (byte >= 0xC2 && byte <= 0xDF) {
      length = 2;
    } else if (byte >= 0xE0 && byte <= 0xEF) {
      length = 3;
      if (byte == 0xE0) low = 0xA0;
      if (byte == 0xED) high = 0x9F;
    } else if (byte >= 0xF0 && byte <= 0xF4) {
      length = 4;
      if (byte == 0xF0) low = 0x90;
      if (byte == 0xF4) high = 0x8F;
    } else {
      return false;
    }
    if (i + length > text.size()) return false;
    for (size_t k = 1; k < length; ++k) {
      const auto next = static_cast<unsigned char>(text[i + k]);
      if (next < (k == 1 ? low : 0x80) || next > (k == 1 ? high : 0xBF)) return false;
    }
    i += length;
  }
  return true;
}

void write_string(std::string& out, std::string_view text) {
  if (!is_valid_utf8(text)) {
    // Rare: nlohmann's own replacement of invalid sequences, so both paths agree.
    out += json(std::string(text)).dump(-1, ' ', false, json::error_handler_t::replace);
    return;
  }
  static constexpr char kHex[] = "0123456789abcdef";
  out += '"';
  size_t plain = 0;  // the start of the run of bytes copied as they are
  for (size_t i = 0; i < text.size(); ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c >= 0x20 && c != '"' && c != '\\') continue;
    out.append(text.data() + plain, i - plain);
    plain = i + 1;
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        out += "\\u00";
        out += kHex[c >> 4];
        out += kHex[c & 15];
    }
  }
  out.append(text.data() + plain, text.size() - plain);
  out += '"';
}

void write_double(std::string& out, double value) {
  // nlohmann's own number writer (what dump() calls): null for non-finite, Grisu2 digits, ".0" on
  // integral values.
  if (!std::isfinite(value)) {
    out += "null";
    return;
  }
  char buffer[64];
  out.append(buffer, nlohmann::detail::to_chars(buffer, buffer + sizeof buffer, value));
}

void write_observation(std::string& out, const TextObservation& observation) {
  out += "{\"long_term\":";
  write_string(out, observation.long_term);
  out += ",\"short_term\":";
  write_string(out, observation.short_term);
  out += '}';
}

void write_reference_answer(std::string& out, const std::string& answer) {
  if (answer.empty()) return;  // absent when empty, as in envs::episode_outputs
  out += ",\"reference_answer\":";
  write_string(out, answer);
}

template <typename Result, typename Write>
std::string write_reply(std::string_view type, uint64_t id, const std::vector<Result>& results, Write write) {
  std::string out;
  out.reserve(64 + results.size() * 512);
  out += "{\"id\":";
  out += std::to_string(id);
  out += ",\"results\":[";
  for (size_t i = 0; i < results.size(); ++i) {
    if (i > 0) out += ',';
    write(out, results[i]);
  }
  out += "],\"type\":";
  write_string(out, type);
  out += '}';
  return out;
}

}  // namespace

std::string encode_reset_reply(uint64_t id, const std::vector<EpisodeStart>& starts) {
  return write_reply("reset", id, starts, [](std::string& out, const EpisodeStart& start) {
    out += "{\"goal\":";
    write_string(out, start.goal);
    out += ",\"instruction_prompt\":";
    write_string(out, start.instruction_prompt);
    out += ",\"max_steps\":";
    out += std::to_string(start.max_steps);
    out += ",\"observation\":";
    write_observation(out, start.observation);
    out += ",\"progression\":";
    write_double(out, start.progression);
    write_reference_answer(out, start.reference_answer);
    out += ",\"slot\":";
    out += std::to_string(start.slot);
    out += '}';
  });
}

std::string encode_step_reply(uint64_t id, const std::vector<StepOutcome>& outcomes) {
  return write_reply("step", id, outcomes, [](std::string& out, const StepOutcome& outcome) {
    out += "{\"observation\":";
    write_observation(out, outcome.observation);
    out += ",\"progression\":";
    write_double(out, outcome.progression);
    write_reference_answer(out, outcome.reference_answer);
    out += ",\"reward\":";
    write_double(out, outcome.result.reward);
    out += ",\"slot\":";
    out += std::to_string(outcome.slot);
    out += ",\"terminated\":";
    out += outcome.result.terminated ? "true" : "false";
    out += ",\"truncated\":";
    out += outcome.result.truncated ? "true" : "false";
    out += '}';
  });
}

std::string encode_reply(std::string_view type, uint64_t id, json body) {
  body["type"] = type;
  body["id"] = id;
  return body.dump(-1, ' ', false, json::error_handler_t::replace);
}

std::string encode_error(uint64_t id, std::string_view message) {
  return encode_reply("error", id, {{"message", message}});
}

std::optional<json> decode_reply(std::string_view payload, std::string_view type, uint64_t id) {
  const json reply = json::parse(payload, nullptr, /*allow_exceptions=*/false);
  if (!reply.is_object() || !reply.contains("type") || !reply["type"].is_string()) {
    throw ServerError("the server sent a reply that is not a JSON object with a type");
  }
  if (reply.value("id", json()) != json(id)) return std::nullopt;
  if (reply["type"] == "error") {
    const json message = reply.value("message", json());
    throw ServerError("env server: " + (message.is_string() ? message.get<std::string>() : std::string("(no message)")));
  }
  if (reply["type"] != type) {
    throw ServerError("expected a '" + std::string(type) + "' reply, got '" + reply["type"].get<std::string>() + "'");
  }
  return reply;
}

std::vector<SlotInfo> decode_slot_infos(const json& body) {
  return read_reply("create", [&] {
    std::vector<SlotInfo> infos;
    for (const json& result : body.at("results")) {
      SlotInfo info;
      info.slot = json_integer<int>(result.at("slot"));
      info.env_id = result.at("env_id").get<std::string>();
      for (const json& action : result.at("actions")) {
        info.actions.push_back({action.at("name").get<std::string>(), action.at("description").get<std::string>()});
      }
      info.default_action = json_integer<int>(result.at("default_action"));
      info.text_rules = text_rules_from_json(result.at("text_rules"));
      infos.push_back(std::move(info));
    }
    return infos;
  });
}

std::vector<EpisodeStart> decode_episode_starts(const json& body) {
  return read_reply("reset", [&] {
    std::vector<EpisodeStart> starts;
    for (const json& result : body.at("results")) {
      starts.push_back({json_integer<int>(result.at("slot")), observation_from_json(result.at("observation")),
                        result.at("instruction_prompt").get<std::string>(), result.at("goal").get<std::string>(),
                        json_integer<int>(result.at("max_steps")), result.at("progression").get<double>(),
                        result.value("reference_answer", std::string())});
    }
    return starts;
  });
}

std::vector<StepOutcome> decode_step_outcomes(const json& body) {
  return read_reply("step", [&] {
    std::vector<StepOutcome> outcomes;
    for (const json& result : body.at("results")) {
      StepOutcome outcome;
      outcome.slot = json_integer<int>(result.at("slot"));
      outcome.result = {result.at("reward").get<double>(), result.at("terminated").get<bool>(),
                        result.at("truncated").get<bool>()};
      outcome.observation = observation_from_json(result.at("observation"));
      outcome.progression = result.at("progression").get<double>();
      outcome.reference_answer = result.value("reference_answer", std::string());
      outcomes.push_back(std::move(outcome));
    }
    return outcomes;
  });
}

EnvApiScript decode_script(const json& body) {
  return read_reply("golden_script", [&] {
    EnvApiScript script;
    script.golden_lines = json_integer<long>(body.at("golden_lines"));
    for (const json& encoded : body.at("lines")) {
      EnvApiLine line;
      if (encoded.contains("reset")) {
        const json& reset = encoded["reset"];
        line.is_reset = true;
        line.env_id = reset.at("env_id").get<std::string>();
        line.options = reset.at("options");
        line.seed = json_integer<uint64_t>(reset.at("seed"));
      } else {
        line.action = json_integer<int>(encoded.at("action"));
      }
      line.expected = encoded.at("expected");
      script.lines.push_back(std::move(line));
    }
    return script;
  });
}

}  // namespace turnrl::envs::server
