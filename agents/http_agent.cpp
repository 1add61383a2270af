#include "agents/http_agent.h"

#include "agents/http_post.h"
#include "agents/request_budget.h"

#include <chrono>
#include <cstdlib>
#include <deque>
#include <future>
#include <optional>
#include <set>
#include <stdexcept>
#include <thread>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <nlohmann/json.hpp>

namespace turnrl::agents {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

struct Connection {
  explicit Connection(asio::io_context& io) : stream(io) {}
  beast::tcp_stream stream;
  beast::flat_buffer buffer;
  bool reused = false;  // carried a request before: the server may have closed it while idle
};
using ConnectionPtr = std::shared_ptr<Connection>;

/** One submitted prompt, through its attempts. */
struct Call {
  explicit Call(asio::io_context& io) : timer(io) {}
  http::request<http::string_body> request;
  http::response<http::string_body> response;
  ReplyHandler on_reply;
  size_t prompt_chars = 0;  // of the messages' contents: the budget's estimate of the tokens
  int attempts = 0;
  RequestBudget::Admission admission;  // the current attempt's
  asio::steady_timer timer;  // the wait before an attempt: backoff, Retry-After, then the budget's turn
};
using CallPtr = std::shared_ptr<Call>;

/** A network error on a connection that carried a request before: the server closed it while
 *  idle (keep-alive timeout), so the attempt goes again on another connection, uncounted. */
bool stale_connection(const beast::error_code& error) {
  return error == http::error::end_of_stream || error == asio::error::eof || error == asio::error::connection_reset ||
         error == asio::error::broken_pipe || error == asio::error::connection_aborted;
}

std::exception_ptr failure(const std::string& message) { return std::make_exception_ptr(std::runtime_error(message)); }

/** A count of the reply's `usage` (OpenAI's prompt_tokens, completion_tokens); 0 when absent. */
size_t usage_count(const nlohmann::json& reply, const char* key) {
  const auto usage = reply.find("usage");
  if (usage == reply.end() || !usage->is_object()) return 0;
  const auto count = usage->find(key);
  return count != usage->end() && count->is_number_unsigned() ? count->get<size_t>() : 0;
}

}  // namespace

/** Everything below runs on the I/O thread, except the constructor, submit() and the destructor. */
struct HttpAgent::Impl {
  Impl(HttpAgentConfig config, std::string host, std::string port, std::string path)
      : config(std::move(config)), host(std::move(host)), port(std::move(port)), path(std::move(path)), work(asio::make_work_guard(io)),
        resolver(io), timeout(std::chrono::milliseconds(static_cast<int64_t>(this->config.timeout_s * 1000))),
        budget(this->config.requests_per_minute, this->config.tokens_per_minute) {
    thread = std::thread([this] { io.run(); });
  }

  ~Impl() {
    asio::post(io, [this] { shut_down(); });
    work.reset();
    thread.join();
  }

  void submit(CallPtr call) {
    asio::post(io, [this, call = std::move(call)] {
      if (stopping) return finish(call, {{}, failure("http agent: stopped")});
      calls.insert(call);
      start(call);
    });
  }

  /** An attempt, once the budget admits it (retries too: each is a request the server counts). */
  void start(const CallPtr& call) {
    ++call->attempts;
    if (!budget.limited()) return dispatch(call);
    const auto now = std::chrono::steady_clock::now();
    call->admission = budget.admit(now, call->prompt_chars);
    if (call->admission.at <= now) return dispatch(call);
    call->timer.expires_at(call->admission.at);
    call->timer.async_wait([this, call](beast::error_code) { stopping ? stopped(call) : dispatch(call); });
  }

  /** The attempt on an idle connection, a new one, or the first to come free. */
  void dispatch(const CallPtr& call) {
    if (!idle.empty()) {
      ConnectionPtr connection = std::move(idle.back());
      idle.pop_back();
      exchange(call, std::move(connection));
    } else if (connections.size() < static_cast<size_t>(config.concurrency)) {
      connect(call);
    } else {
      waiting.push_back(call);
    }
  }

  void connect(const CallPtr& call) {
    auto connection = std::make_shared<Connection>(io);
    connections.insert(connection);
    resolver.async_resolve(host, port, [this, call, connection](beast::error_code error, const tcp::resolver::results_type& endpoints) {
      if (error) {
        closed(connection);
        return stopping ? stopped(call) : retry_or_fail(call, "cannot resolve " + host + ": " + error.message());
      }
      connection->stream.expires_after(timeout);
      connection->stream.async_connect(endpoints, [this, call, connection](beast::error_code error, const tcp::endpoint&) {
        if (error) {
          closed(connection);
          if (stopping) return stopped(call);
          return retry_or_fail(call, error == beast::error::timeout ? "connect timed out" : "connect: " + error.message());
        }
        exchange(call, connection);
      });
    });
  }

  void exchange(const CallPtr& call, const ConnectionPtr& connection) {
    connection->stream.expires_after(timeout);
    http::async_write(connection->stream, call->request, [this, call, connection](beast::error_code error, size_t) {
      if (error) return attempt_failed(call, connection, error, "send");
      call->response = {};
      http::async_read(connection->stream, connection->buffer, call->response,
                       [this, call, connection](beast::error_code error, size_t) {
                         if (error) return attempt_failed(call, connection, error, "receive");
                         release(connection, call->response.keep_alive());
                         answer(call);
                       });
    });
  }

  void attempt_failed(const CallPtr& call, const ConnectionPtr& connection, const beast::error_code& error, const char* what) {
    const bool stale = connection->reused && stale_connection(error);
    release(connection, false);
    if (stopping) return stopped(call);
    if (stale) return dispatch(call);  // the request never reached the server: the same attempt
    retry_or_fail(call, error == beast::error::timeout ? std::string(what) + " timed out" : std::string(what) + ": " + error.message());
  }

  void answer(const CallPtr& call) {
    const unsigned status = call->response.result_int();
    const std::string& body = call->response.body();
    if (status == 429 || status >= 500) {
      return retry_or_fail(call, "HTTP " + std::to_string(status),
                           retry_after_seconds(std::string(call->response["retry-after-ms"]),
                                               std::string(call->response[http::field::retry_after])));
    }
    if (status != 200) {
      const std::string message = "HTTP " + std::to_string(status) + ": " + body.substr(0, 500);
      return finish(call, {{}, failure("http agent: " + config.base_url + ": " + message)});
    }
    const auto reply = nlohmann::json::parse(body, nullptr, false);
    if (reply.is_discarded() || !reply.contains("choices") || !reply["choices"].is_array() || reply["choices"].empty() ||
        !reply["choices"][0].is_object() || !reply["choices"][0].contains("message") || !reply["choices"][0]["message"].is_object() ||
        !reply["choices"][0]["message"].contains("content")) {
      return finish(call, {{}, failure("http agent: " + config.base_url + ": unexpected response body: " + body.substr(0, 500))});
    }
    const nlohmann::json& choice = reply["choices"][0];
    AgentResult result;
    if (choice["message"]["content"].is_string()) result.reply.text = choice["message"]["content"].get<std::string>();
    result.reply.truncated = choice.contains("finish_reason") && choice["finish_reason"] == "length";
    result.reply.prompt_tokens = usage_count(reply, "prompt_tokens");
    result.reply.completion_tokens = usage_count(reply, "completion_tokens");
    const size_t used = result.reply.prompt_tokens + result.reply.completion_tokens;
    if (budget.limited() && used > 0) budget.settle(call->admission, call->prompt_chars, used);  // without a usage the estimate stands
    finish(call, std::move(result));
  }

  /** Another attempt after `wait` (the server's Retry-After) or the backoff, or the call's error. */
  void retry_or_fail(const CallPtr& call, const std::string& why, std::optional<double> wait = std::nullopt) {
    if (stopping) return stopped(call);
    if (call->attempts > config.retries) {
      return finish(call, {{}, failure("http agent: cannot reach " + config.base_url + " after " + std::to_string(call->attempts) +
                                       " attempts (last: " + why + ")")});
    }
    call->timer.expires_after(std::chrono::duration_cast<std::chrono::steady_clock::duration>(
        std::chrono::duration<double>(wait.value_or(config.backoff_s * (1 << (call->attempts - 1))))));
    call->timer.async_wait([this, call](beast::error_code) { stopping ? stopped(call) : start(call); });
  }

  /** A connection done with its exchange: kept for the next request when the server allows. */
  void release(const ConnectionPtr& connection, bool keep) {
    if (!keep || stopping) {
      beast::error_code ignored;
      connection->stream.socket().shutdown(tcp::socket::shutdown_both, ignored);
      connection->stream.close();
      return closed(connection);
    }
    connection->reused = true;
    if (waiting.empty()) return idle.push_back(connection);
    const CallPtr next = std::move(waiting.front());
    waiting.pop_front();
    exchange(next, connection);
  }

  /** A connection is gone: its room goes to the first call waiting for one. */
  void closed(const ConnectionPtr& connection) {
    connections.erase(connection);
    if (stopping || waiting.empty()) return;
    const CallPtr next = std::move(waiting.front());
    waiting.pop_front();
    connect(next);
  }

  void finish(const CallPtr& call, AgentResult result) {
    calls.erase(call);
    const ReplyHandler on_reply = std::move(call->on_reply);
    on_reply(std::move(result));
  }

  void stopped(const CallPtr& call) { finish(call, {{}, failure("http agent: stopped")}); }

  /** Every call still under way ends with an error; the I/O thread then runs out of work. */
  void shut_down() {
    stopping = true;
    resolver.cancel();
    for (const ConnectionPtr& connection : connections) connection->stream.close();  // their handlers see the error
    idle.clear();
    for (const CallPtr& call : calls) call->timer.cancel();
    std::deque<CallPtr> queued;
    queued.swap(waiting);
    for (const CallPtr& call : queued) stopped(call);
  }

  const HttpAgentConfig config;
  const std::string host, port, path;  // path: of the chat completions endpoint
  asio::io_context io;
  asio::executor_work_guard<asio::io_context::executor_type> work;
  tcp::resolver resolver;
  const std::chrono::steady_clock::duration timeout;
  std::thread thread;
  // I/O thread only.
  std::set<ConnectionPtr> connections;  // open or opening, at most config.concurrency
  std::vector<ConnectionPtr> idle;
  std::deque<CallPtr> waiting;          // for a connection
  std::set<CallPtr> calls;              // under way
  RequestBudget budget;
  bool stopping = false;
};

HttpAgent::HttpAgent(HttpAgentConfig config) : config_(std::move(config)) {
  const HttpUrl url = HttpUrl::parse(config_.base_url, "http agent: base_url");
  std::string path = url.path;
  while (!path.empty() && path.back() == '/') path.pop_back();
  if (config_.timeout_s <= 0 || config_.retries < 0) throw std::invalid_argument("http agent: timeout_s must be > 0 and retries >= 0");
  if (config_.concurrency < 1) throw std::invalid_argument("http agent: concurrency must be >= 1");
  if (config_.requests_per_minute < 0 || config_.tokens_per_minute < 0) {
    throw std::invalid_argument("http agent: requests_per_minute and tokens_per_minute must be >= 0");
  }
  impl_ = std::make_unique<Impl>(config_, url.host, url.port, path + "/chat/completions");
}

HttpAgent::~HttpAgent() = default;

void HttpAgent::submit(AgentPrompt prompt, ReplyHandler on_reply) {
  // OpenAI-compatible servers take a signed 64-bit seed: its two's-complement image keeps all 64
  // bits, so `turnrl serve` (which maps it back) samples from the in-process agent's stream.
  const int64_t seed = static_cast<int64_t>(prompt.seed);
  nlohmann::json body = {
      {"model", config_.model}, {"temperature", config_.temperature}, {"max_tokens", config_.max_tokens}, {"seed", seed}};
  body["messages"] = nlohmann::json::array();
  auto call = std::make_shared<Call>(impl_->io);
  for (const auto& message : prompt.messages) {
    body["messages"].push_back({{"role", message.role}, {"content", message.content}});
    call->prompt_chars += message.content.size();
  }
  http::request<http::string_body>& request = call->request;
  request = {http::verb::post, impl_->path, 11};
  request.set(http::field::host, impl_->host);
  request.set(http::field::content_type, "application/json");
  if (!config_.api_key_env.empty()) {
    if (const char* key = std::getenv(config_.api_key_env.c_str()); key && *key) {
      request.set(http::field::authorization, std::string("Bearer ") + key);
    }
  }
  request.keep_alive(true);
  request.body() = body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  request.prepare_payload();
  call->on_reply = std::move(on_reply);
  impl_->submit(std::move(call));
}

std::vector<AgentReply> HttpAgent::act(const std::vector<AgentPrompt>& prompts) {
  std::vector<std::promise<AgentResult>> results(prompts.size());
  std::vector<std::future<AgentResult>> futures;
  for (size_t i = 0; i < prompts.size(); ++i) {
    futures.push_back(results[i].get_future());
    submit(prompts[i], [&promise = results[i]](AgentResult result) { promise.set_value(std::move(result)); });
  }
  std::vector<AgentReply> replies;
  std::exception_ptr first_error;
  for (auto& future : futures) {
    AgentResult result = future.get();
    if (result.error && !first_error) first_error = result.error;
    replies.push_back(std::move(result.reply));
  }
  if (first_error) std::rethrow_exception(first_error);
  return replies;
}

std::string HttpAgent::complete(const std::vector<memory::ChatMessage>& messages) {
  AgentPrompt prompt;
  prompt.messages = messages;
  return act({prompt}).front().text;
}

}  // namespace turnrl::agents
