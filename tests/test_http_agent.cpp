#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <future>
#include <thread>

#include "agents/http_agent.h"
#include "agents/http_post.h"
#include "agents/request_budget.h"
#include "tools/serve/hosted_api_traffic.h"
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

/** A stub script: the first request gets 429 with `retry_header`, the others "turn left"; every
 *  arrival's time goes to `arrivals`. */
serve::OpenAiStubServer::ChatScript refuse_first(std::vector<std::chrono::steady_clock::time_point>& arrivals,
                                                 std::pair<std::string, std::string> retry_header) {
  return [&arrivals, retry_header](int index, const nlohmann::json&) {
    arrivals.push_back(std::chrono::steady_clock::now());
    serve::ChatStubReply reply{200, "turn left", 0};
    if (index == 0) {
      reply.status = 429;
      reply.headers = {retry_header};
    }
    return reply;
  };
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

TEST_CASE("http agent: the reply carries the server's usage") {
  serve::OpenAiStubServer server([](int, const nlohmann::json&) {
    serve::ChatStubReply reply{200, "go forward", 0};
    reply.prompt_tokens = 123;
    reply.completion_tokens = 45;
    return reply;
  });
  agents::HttpAgent agent(config_for(server.base_url()));
  const auto replies = agent.act({{{{"user", "hello"}}, nullptr, 0}});
  REQUIRE(replies.size() == 1);
  CHECK(replies[0].prompt_tokens == 123u);
  CHECK(replies[0].completion_tokens == 45u);
}

TEST_CASE("request budget: admissions keep both rates; an estimate from the prompt's characters, corrected by the usage") {
  using namespace std::chrono_literals;
  const auto t0 = agents::RequestBudget::Clock::time_point{} + 1h;
  agents::RequestBudget none(0, 0);
  CHECK_FALSE(none.limited());
  CHECK(none.admit(t0, 1000).at == t0);
  CHECK(none.admit(t0, 1000).at == t0);

  agents::RequestBudget requests(120, 0);  // one every 0.5 s
  CHECK(requests.admit(t0, 10).at == t0);
  CHECK(requests.admit(t0, 10).at == t0 + 500ms);
  CHECK(requests.admit(t0 + 200ms, 10).at == t0 + 1000ms);
  CHECK(requests.admit(t0 + 5s, 10).at == t0 + 5s);  // idle time saves up no burst

  agents::RequestBudget tokens(0, 6000);  // 100 tokens a second
  const auto first = tokens.admit(t0, 400);  // estimated at 400 / 4 = 100 tokens: 1 s
  CHECK(first.at == t0);
  CHECK(first.tokens == doctest::Approx(100));
  CHECK(tokens.admit(t0, 400).at == t0 + 1s);
  tokens.settle(first, 400, 300);  // it cost 300: the next waits 2 s more
  const auto third = tokens.admit(t0, 400);
  CHECK(third.at == t0 + 4s);
  CHECK(third.tokens == doctest::Approx(300));  // 0.75 tokens a character, as seen
  CHECK_THROWS_AS(agents::RequestBudget(-1, 0), std::invalid_argument);
}

TEST_CASE("http agent: requests_per_minute spaces the requests, however many are in flight") {
  std::vector<std::chrono::steady_clock::time_point> arrivals;
  serve::OpenAiStubServer server([&](int, const nlohmann::json&) {
    arrivals.push_back(std::chrono::steady_clock::now());
    return serve::ChatStubReply{200, "ok", 0};
  });
  auto config = config_for(server.base_url());
  config.concurrency = 8;
  config.requests_per_minute = 600;  // one every 100 ms
  agents::HttpAgent agent(config);
  std::vector<agents::AgentPrompt> prompts(8, agents::AgentPrompt{{{"user", "x"}}, nullptr, 0});
  CHECK(agent.act(prompts).size() == 8);
  REQUIRE(arrivals.size() == 8);
  // The span, not each gap: on a loaded machine one arrival may come late and the next on time.
  CHECK(arrivals.back() - arrivals.front() >= std::chrono::milliseconds(680));
}

TEST_CASE("http agent: tokens_per_minute holds the next request back by the last one's usage") {
  std::vector<std::chrono::steady_clock::time_point> arrivals;
  serve::OpenAiStubServer server([&](int, const nlohmann::json&) {
    arrivals.push_back(std::chrono::steady_clock::now());
    serve::ChatStubReply reply{200, "ok", 0};
    reply.prompt_tokens = 400;  // far above the 40 / 4 characters the client first estimates
    reply.completion_tokens = 100;
    return reply;
  });
  auto config = config_for(server.base_url());
  config.tokens_per_minute = 60000;  // 1000 tokens a second: 500 tokens hold the next 0.5 s
  agents::HttpAgent agent(config);
  for (int i = 0; i < 3; ++i) CHECK(agent.complete({{"user", std::string(40, 'x')}}) == "ok");
  REQUIRE(arrivals.size() == 3);
  CHECK(arrivals[1] - arrivals[0] >= std::chrono::milliseconds(450));
  CHECK(arrivals[2] - arrivals[1] >= std::chrono::milliseconds(450));
}

TEST_CASE("http agent: a retry after a 429 waits its Retry-After, then its turn in the budget") {
  std::vector<std::chrono::steady_clock::time_point> arrivals;
  serve::OpenAiStubServer server(refuse_first(arrivals, {"retry-after-ms", "50"}));
  auto config = config_for(server.base_url());
  config.requests_per_minute = 120;  // one every 0.5 s, retries included
  agents::HttpAgent agent(config);
  CHECK(agent.complete({{"user", "x"}}) == "turn left");
  REQUIRE(arrivals.size() == 2);
  CHECK(arrivals[1] - arrivals[0] >= std::chrono::milliseconds(450));
}

TEST_CASE("http agent: retries after a 500") {
  serve::OpenAiStubServer server([](int index, const nlohmann::json&) {
    return index == 0 ? serve::ChatStubReply{500, "", 0} : serve::ChatStubReply{200, "turn left", 0};
  });
  agents::HttpAgent agent(config_for(server.base_url()));
  CHECK(agent.complete({{"user", "x"}}) == "turn left");
  CHECK(server.requests() == 2);
}

TEST_CASE("http agent: a 429 waits the Retry-After it asks for, not the backoff") {
  std::vector<std::chrono::steady_clock::time_point> arrivals;
  serve::OpenAiStubServer server(refuse_first(arrivals, {"Retry-After", "1"}));
  agents::HttpAgent agent(config_for(server.base_url()));  // backoff 0.01 s
  CHECK(agent.complete({{"user", "x"}}) == "turn left");
  REQUIRE(arrivals.size() == 2);
  CHECK(arrivals[1] - arrivals[0] >= std::chrono::milliseconds(950));
}

TEST_CASE("Retry-After: OpenAI's retry-after-ms first, then whole seconds; a date or a long wait leaves the backoff") {
  CHECK(agents::retry_after_seconds("250", "1") == doctest::Approx(0.25));
  CHECK(agents::retry_after_seconds("", "1") == doctest::Approx(1.0));
  CHECK(agents::retry_after_seconds("soon", "2") == doctest::Approx(2.0));
  CHECK_FALSE(agents::retry_after_seconds("", "Wed, 21 Oct 2015 07:28:00 GMT").has_value());
  CHECK_FALSE(agents::retry_after_seconds("", "600").has_value());
  CHECK_FALSE(agents::retry_after_seconds("", "-1").has_value());
  CHECK_FALSE(agents::retry_after_seconds("", "").has_value());
}

TEST_CASE("hosted API stub traffic: draws follow the request seed and attempt, in any order; shares and median as set") {
  serve::HostedApiProfile profile;
  profile.rate_429 = 0.1;
  profile.rate_5xx = 0.05;
  serve::HostedApiTraffic forward(profile), backward(profile);
  constexpr int kSeeds = 4000;
  std::vector<serve::ChatStubReply> a, b(kSeeds * 2);
  for (int attempt = 0; attempt < 2; ++attempt) {
    for (int seed = 0; seed < kSeeds; ++seed) a.push_back(forward.answer(seed, "go forward"));
  }
  for (int attempt = 0; attempt < 2; ++attempt) {
    for (int seed = kSeeds - 1; seed >= 0; --seed) b[attempt * kSeeds + seed] = backward.answer(seed, "go forward");
  }
  std::vector<int> ok_delays;
  int retried_differently = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    CHECK(a[i].status == b[i].status);
    CHECK(a[i].delay_ms == b[i].delay_ms);
    if (a[i].status == 200) ok_delays.push_back(a[i].delay_ms);
    if (a[i].status == 429) CHECK(a[i].headers == decltype(a[i].headers){{"Retry-After", "1"}, {"retry-after-ms", "1000"}});
    if (i < kSeeds) retried_differently += a[i].delay_ms != a[i + kSeeds].delay_ms;
  }
  CHECK(retried_differently > kSeeds / 2);  // a retry draws afresh
  CHECK(forward.rate_limited() == doctest::Approx(0.1 * 2 * kSeeds).epsilon(0.15));
  CHECK(forward.server_errors() == doctest::Approx(0.05 * 2 * kSeeds).epsilon(0.2));
  std::nth_element(ok_delays.begin(), ok_delays.begin() + ok_delays.size() / 2, ok_delays.end());
  CHECK(ok_delays[ok_delays.size() / 2] == doctest::Approx(800).epsilon(0.1));
  profile.rate_5xx = 0.95;
  CHECK_THROWS_AS(serve::HostedApiTraffic{profile}, std::invalid_argument);
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
