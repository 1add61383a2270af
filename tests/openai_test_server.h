#pragma once
// A tiny OpenAI-compatible chat server for tests: 127.0.0.1 only, an ephemeral port, a scripted
// reply per request, and it stops by itself after `max_requests` or `idle_s` without a request.
#include <atomic>
#include <chrono>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <nlohmann/json.hpp>

namespace turnrl::test {

struct ScriptedResponse {
  unsigned status = 200;
  std::string content;  // the assistant message (status 200)
  int delay_ms = 0;     // wait before answering (to provoke client timeouts)
};

class OpenAiTestServer {
 public:
  using Script = std::function<ScriptedResponse(int index, const nlohmann::json& request)>;

  explicit OpenAiTestServer(Script script, int max_requests = 10000, double idle_s = 60.0)
      : script_(std::move(script)), max_requests_(max_requests), idle_(std::chrono::milliseconds(static_cast<int>(idle_s * 1000))),
        acceptor_(io_, {boost::asio::ip::make_address("127.0.0.1"), 0}), timer_(io_) {
    port_ = acceptor_.local_endpoint().port();
    accept();
    thread_ = std::thread([this] { io_.run(); });
  }
  ~OpenAiTestServer() {
    io_.stop();
    thread_.join();
    for (auto& connection : connections_) connection.join();
  }
  unsigned short port() const { return port_; }
  std::string base_url() const { return "http://127.0.0.1:" + std::to_string(port_) + "/v1"; }
  int requests() const { return served_.load(); }
  /** Most requests being answered at the same time. */
  int max_in_flight() const { return max_in_flight_.load(); }

 private:
  void accept() {
    timer_.expires_after(idle_);
    timer_.async_wait([this](boost::system::error_code error) {
      if (!error) io_.stop();  // idle too long
    });
    acceptor_.async_accept([this](boost::system::error_code error, boost::asio::ip::tcp::socket socket) {
      if (error) return;
      // Each connection on its own thread, as a real server answers requests concurrently.
      connections_.emplace_back([this, socket = std::move(socket)]() mutable { serve(std::move(socket)); });
      if (served_ < max_requests_) accept();
      else io_.stop();
    });
  }

  void serve(boost::asio::ip::tcp::socket socket) {
    namespace http = boost::beast::http;
    boost::beast::flat_buffer buffer;
    http::request<http::string_body> request;
    boost::system::error_code error;
    http::read(socket, buffer, request, error);
    if (error) return;
    const int index = served_++;
    const int in_flight = ++in_flight_;
    for (int seen = max_in_flight_.load(); in_flight > seen && !max_in_flight_.compare_exchange_weak(seen, in_flight);) {
    }
    const auto body = nlohmann::json::parse(request.body(), nullptr, false);
    ScriptedResponse scripted;
    {
      const std::lock_guard<std::mutex> lock(script_mutex_);  // scripts need not be thread-safe
      scripted = script_(index, body);
    }
    if (scripted.delay_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(scripted.delay_ms));
    http::response<http::string_body> response{static_cast<http::status>(scripted.status), 11};
    response.set(http::field::content_type, "application/json");
    if (request.target() != "/v1/chat/completions") {
      response.result(http::status::not_found);
      response.body() = R"({"error":"unknown path"})";
    } else if (scripted.status == 200) {
      response.body() = nlohmann::json{{"choices", {{{"index", 0}, {"message", {{"role", "assistant"}, {"content", scripted.content}}}}}}}.dump();
    } else {
      response.body() = R"({"error":"scripted failure"})";
    }
    response.prepare_payload();
    --in_flight_;
    http::write(socket, response, error);
    socket.shutdown(boost::asio::ip::tcp::socket::shutdown_both, error);
  }

  Script script_;
  std::mutex script_mutex_;
  int max_requests_;
  std::chrono::milliseconds idle_;
  boost::asio::io_context io_;
  boost::asio::ip::tcp::acceptor acceptor_;
  boost::asio::steady_timer timer_;
  std::thread thread_;
  unsigned short port_ = 0;
  std::atomic<int> served_{0}, in_flight_{0}, max_in_flight_{0};
  std::vector<std::thread> connections_;
};

}  // namespace turnrl::test
