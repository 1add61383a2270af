// turnrl serve's request parser: a /v1/chat/completions body to a typed request (fields, defaults,
// the accepted forms of each) or a 400 naming what is wrong; and the OpenAI error object.
#include <doctest/doctest.h>

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "tools/serve/api_error.h"
#include "tools/serve/chat_request.h"

using namespace turnrl;
using nlohmann::json;

namespace {

constexpr int kMaxChoices = 16;
const char* kUser = R"("messages": [{"role": "user", "content": "hi"}])";

/** A body with one user message and `fields` ("" or `"name": value, ...`). */
std::string body(const std::string& fields) {
  std::string text = "{";
  text.append(kUser);
  if (!fields.empty()) text.append(", ").append(fields);
  return text.append("}");
}

serve::ChatRequest parse(const std::string& text) { return serve::parse_chat_request(text, kMaxChoices); }

/** The message of the 400 the body gets; fails the test when the body is accepted or gets another status. */
std::string refusal(const std::string& text) {
  try {
    parse(text);
  } catch (const serve::ApiError& error) {
    CHECK(error.status == 400);
    return error.what();
  }
  FAIL_CHECK("accepted: " << text);
  return "";
}

}  // namespace

TEST_CASE("chat request: the defaults of an absent or null field") {
  for (const std::string& text :
       {body(""), body(R"("max_tokens": null, "temperature": null, "top_p": null, "n": null, "seed": null, "stop": null, "stream": null,
                        "stream_options": null, "model": null, "unknown": [1, 2])")}) {
    CAPTURE(text);
    const serve::ChatRequest request = parse(text);
    REQUIRE(request.messages.size() == 1);
    CHECK(request.messages[0].role == "user");
    CHECK(request.messages[0].content == "hi");
    CHECK_FALSE(request.max_tokens.has_value());
    CHECK(request.temperature == 1.0);
    CHECK(request.top_p == 1.0);
    CHECK_FALSE(request.seed.has_value());
    CHECK(request.stop.empty());
    CHECK(request.n == 1);
    CHECK_FALSE(request.stream);
    CHECK_FALSE(request.include_usage);
  }
}

TEST_CASE("chat request: every field read") {
  const serve::ChatRequest request =
      parse(body(R"("model": "any", "max_tokens": 7, "temperature": 0, "top_p": 0.5, "n": 16, "seed": 42, "stop": ["</a>", "\n"],
                    "stream": true, "stream_options": {"include_usage": true})"));
  CHECK(request.max_tokens == 7);
  CHECK(request.temperature == 0.0);
  CHECK(request.top_p == 0.5);
  CHECK(request.n == kMaxChoices);
  CHECK(request.seed == 42u);
  CHECK(request.stop == std::vector<std::string>{"</a>", "\n"});
  CHECK(request.stream);
  CHECK(request.include_usage);
}

TEST_CASE("chat request: messages take every role, developer as system, and text parts joined") {
  const serve::ChatRequest request = parse(R"({"messages": [
      {"role": "developer", "content": "be brief"}, {"role": "system", "content": "rules"},
      {"role": "user", "content": [{"type": "text", "text": "go "}, {"type": "text", "text": "left"}]},
      {"role": "assistant", "content": ""}]})");
  REQUIRE(request.messages.size() == 4);
  CHECK(request.messages[0].role == "system");
  CHECK(request.messages[0].content == "be brief");
  CHECK(request.messages[1].role == "system");
  CHECK(request.messages[2].role == "user");
  CHECK(request.messages[2].content == "go left");
  CHECK(request.messages[3].role == "assistant");
  CHECK(request.messages[3].content.empty());
}

TEST_CASE("chat request: max_completion_tokens wins over max_tokens; limits at the ends of their ranges") {
  CHECK(parse(body(R"("max_tokens": 5, "max_completion_tokens": 9)")).max_tokens == 9);
  CHECK(parse(body(R"("max_completion_tokens": 1)")).max_tokens == 1);
  CHECK(parse(body(R"("max_tokens": 2147483647)")).max_tokens == 2147483647);
  CHECK(parse(body(R"("temperature": 2)")).temperature == 2.0);
  CHECK(parse(body(R"("top_p": 1)")).top_p == 1.0);
  CHECK(parse(body(R"("n": 1)")).n == 1);
}

TEST_CASE("chat request: a seed is any 64-bit integer, a negative one taken modulo 2^64") {
  CHECK(parse(body(R"("seed": 18446744073709551615)")).seed == UINT64_MAX);
  CHECK(parse(body(R"("seed": -1)")).seed == UINT64_MAX);
  CHECK(parse(body(R"("seed": 0)")).seed == 0u);
}

TEST_CASE("chat request: stop is a string or an array of strings") {
  CHECK(parse(body(R"("stop": "END")")).stop == std::vector<std::string>{"END"});
  CHECK(parse(body(R"("stop": [])")).stop.empty());
}

TEST_CASE("chat request: a body that is not a JSON object") {
  CHECK(refusal("") == "the request body is not valid JSON");
  CHECK(refusal(R"({"messages": [)") == "the request body is not valid JSON");
  CHECK(refusal("messages=hi") == "the request body is not valid JSON");
  CHECK(refusal("[1, 2]") == "the request body must be a JSON object");
  CHECK(refusal(R"("text")") == "the request body must be a JSON object");
}

TEST_CASE("chat request: each invalid field is refused with a message naming it") {
  const struct {
    std::string body, message;
  } cases[] = {
      {"{}", "'messages' is required"},
      {R"({"messages": null})", "'messages' is required"},
      {R"({"messages": []})", "'messages' must be a non-empty array"},
      {R"({"messages": {"role": "user"}})", "'messages' must be a non-empty array"},
      {R"({"messages": ["hi"]})", "messages[0] must be an object"},
      {R"({"messages": [{"content": "hi"}]})", "messages[0].role must be a string"},
      {R"({"messages": [{"role": 1, "content": "hi"}]})", "messages[0].role must be a string"},
      {R"({"messages": [{"role": "user", "content": "a"}, {"role": "tool", "content": "b"}]})",
       "messages[1].role must be system, developer, user or assistant (got 'tool')"},
      {R"({"messages": [{"role": "user"}]})", "messages[0].content is required"},
      {R"({"messages": [{"role": "user", "content": 3}]})", "messages[0].content must be a string or an array of text parts"},
      {R"({"messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {}}]}]})",
       R"(messages[0].content parts must be {"type": "text", "text": string} (only text is supported))"},
      {R"({"messages": [{"role": "user", "content": [{"type": "text", "text": 1}]}]})",
       R"(messages[0].content parts must be {"type": "text", "text": string} (only text is supported))"},
      {body(R"("max_tokens": 0)"), "'max_tokens' must be between 1 and 2147483647"},
      {body(R"("max_tokens": 2147483648)"), "'max_tokens' must be between 1 and 2147483647"},
      {body(R"("max_tokens": 18446744073709551615)"), "'max_tokens' must be between 1 and 2147483647"},
      {body(R"("max_tokens": 1.5)"), "'max_tokens' must be an integer"},
      {body(R"("max_completion_tokens": "8")"), "'max_completion_tokens' must be an integer"},
      {body(R"("temperature": -0.1)"), "'temperature' must be in [0.000000, 2.000000]"},
      {body(R"("temperature": 2.5)"), "'temperature' must be in [0.000000, 2.000000]"},
      {body(R"("temperature": "hot")"), "'temperature' must be a number"},
      {body(R"("top_p": 0)"), "'top_p' must be in (0.000000, 1.000000]"},
      {body(R"("top_p": 1.01)"), "'top_p' must be in (0.000000, 1.000000]"},
      {body(R"("n": 0)"), "'n' must be between 1 and 16"},
      {body(R"("n": 17)"), "'n' must be between 1 and 16"},
      {body(R"("n": true)"), "'n' must be an integer"},
      {body(R"("seed": 1.0)"), "'seed' must be an integer"},
      {body(R"("seed": "1")"), "'seed' must be an integer"},
      {body(R"("stop": 3)"), "'stop' must be a string or an array of strings"},
      {body(R"("stop": ["a", 3])"), "'stop' must be a string or an array of strings"},
      {body(R"("stop": "")"), "'stop' strings must not be empty"},
      {body(R"("stop": ["a", ""])"), "'stop' strings must not be empty"},
      {body(R"("stream": "yes")"), "'stream' must be a boolean"},
      {body(R"("stream_options": true)"), "'stream_options' must be an object"},
      {body(R"("stream_options": {"include_usage": 1})"), "'stream_options.include_usage' must be a boolean"},
      {body(R"("model": 4)"), "'model' must be a string"},
  };
  for (const auto& each : cases) {
    CAPTURE(each.body);
    CHECK(refusal(each.body) == each.message);
  }
}

TEST_CASE("chat request: n is bounded by the server's largest") {
  CHECK(serve::parse_chat_request(body(R"("n": 3)"), 3).n == 3);
  try {
    serve::parse_chat_request(body(R"("n": 3)"), 2);
    FAIL("n above the server's largest was accepted");
  } catch (const serve::ApiError& error) {
    CHECK(std::string(error.what()) == "'n' must be between 1 and 2");
  }
}

TEST_CASE("api error: OpenAI's error object, its type following from the status") {
  const json error = serve::error_body(400, "'n' must be an integer");
  CHECK(error == json{{"error", {{"message", "'n' must be an integer"}, {"type", "invalid_request_error"}, {"param", nullptr}, {"code", nullptr}}}});
  CHECK(serve::error_body(404, "no model")["error"]["type"] == "not_found_error");
  CHECK(serve::error_body(413, "too large")["error"]["type"] == "invalid_request_error");
  CHECK(serve::error_body(500, "failed")["error"]["type"] == "server_error");
}
