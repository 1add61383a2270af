#include <doctest/doctest.h>

#include <chrono>
#include <cstdlib>

#include "agents/http_agent.h"
#include "openai_test_server.h"

using namespace turnrl;

namespace {

agents::HttpAgentConfig config_for(const std::string& url) {
  agents::HttpAgentConfig config;
  config.base_url = url;
  config.model = "test-model";
  config.timeout_s = 0.5;
  config.retries = 2;
  config.backoff_s = 0.01;
  return config;
}

}  // namespace

TEST_CASE("http agent: request format and reply") {
  nlohmann::json seen;
  test::OpenAiTestServer server([&](int, const nlohmann::json& request) {
    seen = request;
    return test::ScriptedResponse{200, "go forward", 0};
  });
  setenv("TURNRL_TEST_API_KEY", "secret", 1);
  auto config = config_for(server.base_url());
  config.api_key_env = "TURNRL_TEST_API_KEY";
  config.concurrency = 1;  // in order, so `seen` is the second request
  agents::HttpAgent agent(config);
  const auto replies = agent.act({{{{"user", "hello \xff"}, {"assistant", "hi"}}, nullptr, 0}, {{{"user", "again"}}, nullptr, 0}});
  REQUIRE(replies.size() == 2);
  CHECK(replies[0].text == "go forward");
  CHECK(server.requests() == 2);
  CHECK(seen["model"] == "test-model");
  CHECK(seen["messages"].size() == 1);
  CHECK(seen["messages"][0]["content"] == "again");
}

TEST_CASE("http agent: retries after a 500") {
  test::OpenAiTestServer server([](int index, const nlohmann::json&) {
    return index == 0 ? test::ScriptedResponse{500, "", 0} : test::ScriptedResponse{200, "turn left", 0};
  });
  agents::HttpAgent agent(config_for(server.base_url()));
  CHECK(agent.complete({{"user", "x"}}) == "turn left");
  CHECK(server.requests() == 2);
}

TEST_CASE("http agent: a 400 fails at once with the body") {
  test::OpenAiTestServer server([](int, const nlohmann::json&) { return test::ScriptedResponse{400, "", 0}; });
  agents::HttpAgent agent(config_for(server.base_url()));
  CHECK_THROWS_WITH_AS(agent.complete({{"user", "x"}}), doctest::Contains("HTTP 400"), std::runtime_error);
  CHECK(server.requests() == 1);
}

TEST_CASE("http agent: timeout, then success on retry") {
  test::OpenAiTestServer server([](int index, const nlohmann::json&) {
    return test::ScriptedResponse{200, "drop", index == 0 ? 1500 : 0};
  });
  agents::HttpAgent agent(config_for(server.base_url()));
  const auto start = std::chrono::steady_clock::now();
  CHECK(agent.complete({{"user", "x"}}) == "drop");
  CHECK(std::chrono::steady_clock::now() - start >= std::chrono::milliseconds(450));
}

TEST_CASE("http agent: unreachable server gives a clear error") {
  unsigned short port;
  { test::OpenAiTestServer closed([](int, const nlohmann::json&) { return test::ScriptedResponse{}; }); port = closed.port(); }
  agents::HttpAgent agent(config_for("http://127.0.0.1:" + std::to_string(port) + "/v1"));
  CHECK_THROWS_WITH_AS(agent.complete({{"user", "x"}}), doctest::Contains("cannot reach http://127.0.0.1:"), std::runtime_error);
  CHECK_THROWS_AS(agents::HttpAgent(config_for("https://example.com/v1")), std::invalid_argument);
  CHECK_THROWS_AS(agents::HttpAgent(config_for("http://host:port/v1")), std::invalid_argument);
}

TEST_CASE("http agent: a batch's requests run concurrently, replies stay in prompt order") {
  test::OpenAiTestServer server([](int, const nlohmann::json& request) {
    return test::ScriptedResponse{200, "echo " + request["messages"].back()["content"].get<std::string>(), 150};
  });
  auto config = config_for(server.base_url());
  config.concurrency = 3;
  agents::HttpAgent agent(config);
  std::vector<agents::AgentPrompt> prompts;
  for (int i = 0; i < 7; ++i) prompts.push_back({{{"user", std::to_string(i)}}, nullptr, 0});
  const auto replies = agent.act(prompts);
  REQUIRE(replies.size() == 7);
  for (int i = 0; i < 7; ++i) CHECK(replies[i].text == "echo " + std::to_string(i));
  CHECK(server.max_in_flight() == 3);
  config.concurrency = 0;
  CHECK_THROWS_AS(agents::HttpAgent{config}, std::invalid_argument);
}

TEST_CASE("http agent: a failing request in a concurrent batch fails the call") {
  test::OpenAiTestServer server([](int, const nlohmann::json& request) {
    const bool bad = request["messages"].back()["content"] == "2";
    return test::ScriptedResponse{bad ? 400u : 200u, "ok", 0};
  });
  agents::HttpAgent agent(config_for(server.base_url()));
  std::vector<agents::AgentPrompt> prompts;
  for (int i = 0; i < 5; ++i) prompts.push_back({{{"user", std::to_string(i)}}, nullptr, 0});
  CHECK_THROWS_WITH_AS(agent.act(prompts), doctest::Contains("HTTP 400"), std::runtime_error);
}
