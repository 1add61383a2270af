#include "tools/serve/chat_request.h"

#include <limits>

#include <nlohmann/json.hpp>

#include "tools/serve/api_error.h"

namespace turnrl::serve {
namespace {

using nlohmann::json;

[[noreturn]] void bad_request(const std::string& message) { throw ApiError(400, message); }

std::string message_content(const json& content, const std::string& where) {
  if (content.is_string()) return content.get<std::string>();
  if (!content.is_array()) bad_request(where + ".content must be a string or an array of text parts");
  std::string text;
  for (const json& part : content) {
    if (!part.is_object() || part.value("type", "") != "text" || !part.contains("text") || !part["text"].is_string()) {
      bad_request(where + ".content parts must be {\"type\": \"text\", \"text\": string} (only text is supported)");
    }
    text += part["text"].get<std::string>();
  }
  return text;
}

/** The field when present and not null. */
const json* field(const json& body, const char* name) {
  const auto found = body.find(name);
  return found == body.end() || found->is_null() ? nullptr : &*found;
}

}  // namespace

ChatRequest parse_chat_request(std::string_view text, int max_choices) {
  const json body = json::parse(text, nullptr, false);
  if (body.is_discarded()) bad_request("the request body is not valid JSON");
  if (!body.is_object()) bad_request("the request body must be a JSON object");
  ChatRequest request;
  const json* messages = field(body, "messages");
  if (!messages) bad_request("'messages' is required");
  if (!messages->is_array() || messages->empty()) bad_request("'messages' must be a non-empty array");
  for (size_t i = 0; i < messages->size(); ++i) {
    const json& message = (*messages)[i];
    const std::string where = "messages[" + std::to_string(i) + "]";
    if (!message.is_object()) bad_request(where + " must be an object");
    const json* role = field(message, "role");
    if (!role || !role->is_string()) bad_request(where + ".role must be a string");
    std::string name = role->get<std::string>();
    if (name == "developer") name = "system";  // newer clients' name for the system message
    if (name != "system" && name != "user" && name != "assistant") {
      bad_request(where + ".role must be system, developer, user or assistant (got '" + name + "')");
    }
    const json* content = field(message, "content");
    if (!content) bad_request(where + ".content is required");
    request.messages.push_back({name, message_content(*content, where)});
  }
  auto integer = [&](const char* name, int64_t low, int64_t high) -> std::optional<int64_t> {
    const json* value = field(body, name);
    if (!value) return std::nullopt;
    if (!value->is_number_integer()) bad_request(std::string("'") + name + "' must be an integer");
    const bool beyond_int64 = value->is_number_unsigned() && value->get<uint64_t>() > static_cast<uint64_t>(high);
    if (beyond_int64 || value->get<int64_t>() < low || value->get<int64_t>() > high) {
      bad_request(std::string("'") + name + "' must be between " + std::to_string(low) + " and " + std::to_string(high));
    }
    return value->get<int64_t>();
  };
  auto number = [&](const char* name, double low, double high, bool low_open) -> std::optional<double> {
    const json* value = field(body, name);
    if (!value) return std::nullopt;
    if (!value->is_number()) bad_request(std::string("'") + name + "' must be a number");
    const double x = value->get<double>();
    if (x > high || x < low || (low_open && x == low)) {
      bad_request(std::string("'") + name + "' must be in " + (low_open ? "(" : "[") + std::to_string(low) + ", " +
                  std::to_string(high) + "]");
    }
    return x;
  };
  for (const char* name : {"max_tokens", "max_completion_tokens"}) {  // the newer name wins
    if (const auto limit = integer(name, 1, std::numeric_limits<int>::max())) request.max_tokens = static_cast<int>(*limit);
  }
  request.temperature = number("temperature", 0.0, 2.0, false).value_or(1.0);
  request.top_p = number("top_p", 0.0, 1.0, true).value_or(1.0);
  request.n = static_cast<int>(integer("n", 1, max_choices).value_or(1));
  if (const json* seed = field(body, "seed")) {
    if (!seed->is_number_integer()) bad_request("'seed' must be an integer");
    request.seed = seed->is_number_unsigned() ? seed->get<uint64_t>() : static_cast<uint64_t>(seed->get<int64_t>());
  }
  if (const json* stop = field(body, "stop")) {
    if (stop->is_string()) {
      request.stop.push_back(stop->get<std::string>());
    } else if (stop->is_array()) {
      for (const json& each : *stop) {
        if (!each.is_string()) bad_request("'stop' must be a string or an array of strings");
        request.stop.push_back(each.get<std::string>());
      }
    } else {
      bad_request("'stop' must be a string or an array of strings");
    }
    for (const std::string& each : request.stop) {
      if (each.empty()) bad_request("'stop' strings must not be empty");
    }
  }
  if (const json* stream = field(body, "stream")) {
    if (!stream->is_boolean()) bad_request("'stream' must be a boolean");
    request.stream = stream->get<bool>();
  }
  if (const json* options = field(body, "stream_options")) {
    if (!options->is_object()) bad_request("'stream_options' must be an object");
    if (const json* usage = field(*options, "include_usage")) {
      if (!usage->is_boolean()) bad_request("'stream_options.include_usage' must be a boolean");
      request.include_usage = usage->get<bool>();
    }
  }
  if (const json* model = field(body, "model"); model && !model->is_string()) bad_request("'model' must be a string");
  return request;
}

}  // namespace turnrl::serve
