#include "agents/http_agent.h"

#include <chrono>
#include <cstdlib>
#include <stdexcept>
#include <algorithm>
#include <atomic>
#include <exception>
#include <mutex>
#include <thread>

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <nlohmann/json.hpp>

namespace turnrl::agents {
namespace {

namespace beast = boost::beast;
namespace http = beast::http;
using tcp = boost::asio::ip::tcp;

/** An attempt that may succeed on retry (network trouble, 429, 5xx). */
struct TransientError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

}  // namespace

HttpAgent::HttpAgent(HttpAgentConfig config) : config_(std::move(config)) {
  const std::string scheme = "http://";
  if (config_.base_url.rfind(scheme, 0) != 0) {
    throw std::invalid_argument("http agent: base_url must start with http:// (got '" + config_.base_url + "')");
  }
  const std::string rest = config_.base_url.substr(scheme.size());
  const size_t slash = rest.find('/');
  const std::string authority = rest.substr(0, slash);
  path_ = slash == std::string::npos ? "" : rest.substr(slash);
  while (!path_.empty() && path_.back() == '/') path_.pop_back();
  path_ += "/chat/completions";
  const size_t colon = authority.rfind(':');
  host_ = authority.substr(0, colon);
  port_ = colon == std::string::npos ? "80" : authority.substr(colon + 1);
  if (host_.empty() || port_.empty() || port_.find_first_not_of("0123456789") != std::string::npos) {
    throw std::invalid_argument("http agent: cannot parse host and port from base_url '" + config_.base_url + "'");
  }
  if (config_.timeout_s <= 0 || config_.retries < 0) throw std::invalid_argument("http agent: timeout_s must be > 0 and retries >= 0");
  if (config_.concurrency < 1) throw std::invalid_argument("http agent: concurrency must be >= 1");
}

std::string HttpAgent::complete(const std::vector<memory::ChatMessage>& messages) const {
  nlohmann::json body = {{"model", config_.model}, {"temperature", config_.temperature}, {"max_tokens", config_.max_tokens}};
  body["messages"] = nlohmann::json::array();
  for (const auto& message : messages) body["messages"].push_back({{"role", message.role}, {"content", message.content}});
  http::request<http::string_body> request{http::verb::post, path_, 11};
  request.set(http::field::host, host_);
  request.set(http::field::content_type, "application/json");
  if (!config_.api_key_env.empty()) {
    if (const char* key = std::getenv(config_.api_key_env.c_str()); key && *key) {
      request.set(http::field::authorization, std::string("Bearer ") + key);
    }
  }
  request.body() = body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  request.prepare_payload();
  const auto timeout = std::chrono::milliseconds(static_cast<int64_t>(config_.timeout_s * 1000));

  auto attempt = [&]() -> std::string {
    boost::asio::io_context io;
    beast::tcp_stream stream(io);
    beast::error_code error;
    auto run = [&](const char* what) {
      io.run();
      io.restart();
      if (error == beast::error::timeout) throw TransientError(std::string(what) + " timed out");
      if (error) throw TransientError(std::string(what) + ": " + error.message());
    };
    tcp::resolver resolver(io);
    const auto endpoints = resolver.resolve(host_, port_, error);
    if (error) throw TransientError("cannot resolve " + host_ + ": " + error.message());
    stream.expires_after(timeout);
    stream.async_connect(endpoints, [&](beast::error_code e, const tcp::endpoint&) { error = e; });
    run("connect");
    stream.expires_after(timeout);
    http::async_write(stream, request, [&](beast::error_code e, size_t) { error = e; });
    run("send");
    beast::flat_buffer buffer;
    http::response<http::string_body> response;
    stream.expires_after(timeout);
    http::async_read(stream, buffer, response, [&](beast::error_code e, size_t) { error = e; });
    run("receive");
    const unsigned status = response.result_int();
    if (status == 429 || status >= 500) throw TransientError("HTTP " + std::to_string(status));
    if (status != 200) throw std::runtime_error("HTTP " + std::to_string(status) + ": " + response.body().substr(0, 500));
    const auto reply = nlohmann::json::parse(response.body(), nullptr, false);
    if (reply.is_discarded() || !reply.contains("choices") || !reply["choices"].is_array() || reply["choices"].empty() ||
        !reply["choices"][0].contains("message") || !reply["choices"][0]["message"].contains("content")) {
      throw std::runtime_error("unexpected response body: " + response.body().substr(0, 500));
    }
    const auto& content = reply["choices"][0]["message"]["content"];
    return content.is_string() ? content.get<std::string>() : std::string();
  };

  std::string last_error;
  for (int k = 0; k <= config_.retries; ++k) {
    if (k > 0) std::this_thread::sleep_for(std::chrono::duration<double>(config_.backoff_s * (1 << (k - 1))));
    try {
      return attempt();
    } catch (const TransientError& error) {
      last_error = error.what();
    } catch (const std::runtime_error& error) {
      throw std::runtime_error("http agent: " + config_.base_url + ": " + error.what());
    }
  }
  throw std::runtime_error("http agent: cannot reach " + config_.base_url + " after " + std::to_string(config_.retries + 1) +
                           " attempts (last: " + last_error + ")");
}

std::vector<AgentReply> HttpAgent::act(const std::vector<AgentPrompt>& prompts) {
  std::vector<AgentReply> replies(prompts.size());
  std::atomic<size_t> next{0};
  std::mutex failure_mutex;
  std::exception_ptr failure;
  auto work = [&] {
    for (size_t i = next++; i < prompts.size(); i = next++) {
      try {
        replies[i].text = complete(prompts[i].messages);
      } catch (...) {
        const std::lock_guard<std::mutex> lock(failure_mutex);
        if (!failure) failure = std::current_exception();
        next = prompts.size();  // stop handing out requests
      }
    }
  };
  const size_t workers = std::min(prompts.size(), static_cast<size_t>(config_.concurrency));
  std::vector<std::thread> threads;
  for (size_t w = 1; w < workers; ++w) threads.emplace_back(work);
  work();
  for (auto& thread : threads) thread.join();
  if (failure) std::rethrow_exception(failure);
  return replies;
}

}  // namespace turnrl::agents
