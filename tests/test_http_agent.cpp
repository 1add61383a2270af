#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <future>
#include <thread>

#include "agents/http_agent.h"
#include "tools/serve/openai_stub_server.h"

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
  serve::OpenAiStubServer server([&](int, const nlohmann::json& request) {
    seen = request;
    return serve::ChatStubReply{200, "go forward", 0};
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
  CHECK(seen["seed"] == 0);
  CHECK(server.connections() == 1);  // keep-alive: both requests on one connection
}

TEST_CASE("http agent: retries after a 500") {
  serve::OpenAiStubServer server([](int index, const nlohmann::json&) {
    return index == 0 ? serve::ChatStubReply{500, "", 0} : serve::ChatStubReply{200, "turn left", 0};
  });
  agents::HttpAgent agent(config_for(server.base_url()));
  CHECK(agent.complete({{"user", "x"}}) == "turn left");
  CHECK(server.requests() == 2);
}

TEST_CASE("http agent: a 400 fails at once with the body") {
  serve::OpenAiStubServer server([](int, const nlohmann::json&) { return serve::ChatStubReply{400, "", 0}; });
  agents::HttpAgent agent(config_for(server.base_url()));
  CHECK_THROWS_WITH_AS(agent.complete({{"user", "x"}}), doctest::Contains("HTTP 400"), std::runtime_error);
  CHECK(server.requests() == 1);
}

TEST_CASE("http agent: timeout, then success on retry") {
  serve::OpenAiStubServer server([](int index, const nlohmann::json&) {
    return serve::ChatStubReply{200, "drop", index == 0 ? 1500 : 0};
  });
  agents::HttpAgent agent(config_for(server.base_url()));
  const auto start = std::chrono::steady_clock::now();
  CHECK(agent.complete({{"user", "x"}}) == "drop");
  CHECK(std::chrono::steady_clock::now() - start >= std::chrono::milliseconds(450));
}

TEST_CASE("http agent: unreachable server gives a clear error") {
  unsigned short port;
  { serve::OpenAiStubServer closed([](int, const nlohmann::json&) { return serve::ChatStubReply{}; }); port = closed.port(); }
  agents::HttpAgent agent(config_for("http://127.0.0.1:" + std::to_string(port) + "/v1"));
  CHECK_THROWS_WITH_AS(agent.complete({{"user", "x"}}), doctest::Contains("cannot reach http://127.0.0.1:"), std::runtime_error);
  CHECK_THROWS_AS(agents::HttpAgent(config_for("https://example.com/v1")), std::invalid_argument);
  CHECK_THROWS_AS(agents::HttpAgent(config_for("http://host:port/v1")), std::invalid_argument);
}

TEST_CASE("http agent: a batch's requests run concurrently, replies stay in prompt order") {
  serve::OpenAiStubServer server([](int, const nlohmann::json& request) {
    return serve::ChatStubReply{200, "echo " + request["messages"].back()["content"].get<std::string>(), 150};
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
  serve::OpenAiStubServer server([](int, const nlohmann::json& request) {
    const bool bad = request["messages"].back()["content"] == "2";
    return serve::ChatStubReply{bad ? 400u : 200u, "ok", 0};
  });
  agents::HttpAgent agent(config_for(server.base_url()));
  std::vector<agents::AgentPrompt> prompts;
  for (int i = 0; i < 5; ++i) prompts.push_back({{{"user", std::to_string(i)}}, nullptr, 0});
  CHECK_THROWS_WITH_AS(agent.act(prompts), doctest::Contains("HTTP 400"), std::runtime_error);
}

namespace {

/** Submits `prompt` and waits for its result (tests only: the agent answers on its own thread). */
std::future<agents::AgentResult> submitted(agents::HttpAgent& agent, const std::string& text, uint64_t seed = 0) {
  auto promise = std::make_shared<std::promise<agents::AgentResult>>();
  agent.submit({{{"user", text}}, nullptr, seed}, [promise](agents::AgentResult result) { promise->set_value(std::move(result)); });
  return promise->get_future();
}

}  // namespace

TEST_CASE("http agent: submit answers each request as it comes back, hundreds in flight, no batch barrier") {
  serve::OpenAiStubServer server([](int, const nlohmann::json& request) {
    const std::string text = request["messages"].back()["content"];
    return serve::ChatStubReply{200, "re " + text, text == "slow" ? 4000 : 800};
  });
  auto config = config_for(server.base_url());
  config.timeout_s = 10;
  config.concurrency = 300;
  agents::HttpAgent agent(config);
  CHECK(agent.asynchronous());
  std::future<agents::AgentResult> slow = submitted(agent, "slow");
  std::vector<std::future<agents::AgentResult>> fast;
  for (int i = 0; i < 250; ++i) fast.push_back(submitted(agent, std::to_string(i), static_cast<uint64_t>(i)));
  for (int i = 0; i < 250; ++i) {
    const agents::AgentResult result = fast[i].get();
    REQUIRE_FALSE(result.error);
    CHECK(result.reply.text == "re " + std::to_string(i));
  }
  // Every fast reply came back while the slow one was still being answered.
  CHECK(slow.wait_for(std::chrono::seconds(0)) == std::future_status::timeout);
  CHECK(server.max_in_flight() == 251);
  CHECK(slow.get().reply.text == "re slow");
}

TEST_CASE("http agent: keep-alive connections are reused, at most `concurrency` of them") {
  serve::OpenAiStubServer server([](int, const nlohmann::json&) { return serve::ChatStubReply{200, "ok", 20}; });
  auto config = config_for(server.base_url());
  config.concurrency = 4;
  agents::HttpAgent agent(config);
  for (int round = 0; round < 3; ++round) {
    std::vector<std::future<agents::AgentResult>> replies;
    for (int i = 0; i < 10; ++i) replies.push_back(submitted(agent, "x"));
    for (auto& reply : replies) CHECK_FALSE(reply.get().error);
  }
  CHECK(server.requests() == 30);
  CHECK(server.max_in_flight() == 4);
  CHECK(server.connections() == 4);
}

TEST_CASE("http agent: a connection the server dropped while idle is replaced without costing an attempt") {
  serve::OpenAiStubServer server([](int index, const nlohmann::json&) {
    serve::ChatStubReply response{200, "reply " + std::to_string(index), 0};
    response.hang_up = true;  // every connection is gone once its reply is sent
    return response;
  });
  auto config = config_for(server.base_url());
  config.retries = 0;
  config.concurrency = 1;
  agents::HttpAgent agent(config);
  for (int i = 0; i < 3; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));  // the hang-up reaches the client first
    CHECK(agent.complete({{"user", "x"}}) == "reply " + std::to_string(i));
  }
  CHECK(server.connections() == 3);
}

TEST_CASE("http agent: submit delivers errors; the length limit marks a reply truncated") {
  serve::OpenAiStubServer server([](int, const nlohmann::json& request) {
    const std::string text = request["messages"].back()["content"];
    if (text == "bad") return serve::ChatStubReply{400, "", 0};
    serve::ChatStubReply response{200, "cut", 0};
    response.finish_reason = "length";
    return response;
  });
  agents::HttpAgent agent(config_for(server.base_url()));
  const agents::AgentResult bad = submitted(agent, "bad").get();
  REQUIRE(bad.error);
  CHECK_THROWS_WITH_AS(std::rethrow_exception(bad.error), doctest::Contains("HTTP 400"), std::runtime_error);
  const agents::AgentResult cut = submitted(agent, "long").get();
  CHECK_FALSE(cut.error);
  CHECK(cut.reply.truncated);
}

TEST_CASE("http agent: requests still in flight when the agent goes away are answered with an error") {
  serve::OpenAiStubServer server([](int, const nlohmann::json&) { return serve::ChatStubReply{200, "late", 3000}; });
  std::future<agents::AgentResult> pending;
  {
    agents::HttpAgent agent(config_for(server.base_url()));
    pending = submitted(agent, "x");
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  REQUIRE(pending.wait_for(std::chrono::seconds(0)) == std::future_status::ready);
  const agents::AgentResult result = pending.get();
  REQUIRE(result.error);
  CHECK_THROWS_WITH_AS(std::rethrow_exception(result.error), doctest::Contains("stopped"), std::runtime_error);
}
