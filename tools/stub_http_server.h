#pragma once
// A scripted JSON-over-HTTP server on loopback, for tests and benchmarks (a reward scorer, an
// OpenAI-compatible chat server through openai_stub_server.h): 127.0.0.1 only, an ephemeral port,
// one I/O thread (a delay is a timer, not a sleeping thread, so hundreds of requests wait at once),
// keep-alive connections when the client asks for them, and it stops by itself after `idle_s`
// without a request. Header-only: tests include it as the `turnrl` binary does.
#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <thread>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <nlohmann/json.hpp>

namespace turnrl::tools {

struct StubReply {
  unsigned status = 200;
  nlohmann::json body = nlohmann::json::object();
  int delay_ms = 0;      // wait before answering (a server's latency, or a client timeout to provoke)
  bool hang_up = false;  // close the connection after answering, unannounced (a keep-alive timeout)
};

class StubHttpServer {
 public:
  /** Called on the server's thread, one request at a time. `index`: the request's number from 0;
   *  `target`: its path; `request`: its body (discarded JSON when unreadable). */
  using Script = std::function<StubReply(int index, const std::string& target, const nlohmann::json& request)>;

  explicit StubHttpServer(Script script, double idle_s = 60.0)
      : script_(std::move(script)), idle_(std::chrono::milliseconds(static_cast<int>(idle_s * 1000))),
        acceptor_(io_, {boost::asio::ip::make_address("127.0.0.1"), 0}), idle_timer_(io_) {
    port_ = acceptor_.local_endpoint().port();
    accept();
    arm_idle_timer();
    thread_ = std::thread([this] { io_.run(); });
  }
  ~StubHttpServer() {
    io_.stop();
    thread_.join();
  }
  StubHttpServer(const StubHttpServer&) = delete;
  StubHttpServer& operator=(const StubHttpServer&) = delete;

  unsigned short port() const { return port_; }
  std::string url(const std::string& path) const { return "http://127.0.0.1:" + std::to_string(port_) + path; }
  int requests() const { return served_.load(); }
  int connections() const { return connections_.load(); }
  /** Most requests being answered at the same time. */
  int max_in_flight() const { return max_in_flight_.load(); }

 private:
  using tcp = boost::asio::ip::tcp;
  struct Session {
    explicit Session(tcp::socket s) : socket(std::move(s)), delay(socket.get_executor()) {}
    tcp::socket socket;
    boost::asio::steady_timer delay;
    boost::beast::flat_buffer buffer;
    boost::beast::http::request<boost::beast::http::string_body> request;
    boost::beast::http::response<boost::beast::http::string_body> response;
    bool hang_up = false;
  };

  void arm_idle_timer() {
    idle_timer_.expires_after(idle_);
    idle_timer_.async_wait([this](boost::system::error_code error) {
      if (!error) io_.stop();  // idle too long
    });
  }

  void accept() {
    acceptor_.async_accept([this](boost::system::error_code error, tcp::socket socket) {
      if (error) return;
      ++connections_;
      read(std::make_shared<Session>(std::move(socket)));
      accept();
    });
  }

  void read(const std::shared_ptr<Session>& session) {
    session->request = {};
    boost::beast::http::async_read(session->socket, session->buffer, session->request,
                                   [this, session](boost::system::error_code error, size_t) {
                                     if (!error) answer(session);
                                   });
  }

  void answer(const std::shared_ptr<Session>& session) {
    namespace http = boost::beast::http;
    arm_idle_timer();
    const int index = served_++;
    const int in_flight = ++in_flight_;
    if (in_flight > max_in_flight_) max_in_flight_ = in_flight;  // only this thread writes it
    const auto body = nlohmann::json::parse(session->request.body(), nullptr, false);
    const StubReply scripted = script_(index, std::string(session->request.target()), body);
    http::response<http::string_body>& response = session->response;
    response = {static_cast<http::status>(scripted.status), 11};
    response.set(http::field::content_type, "application/json");
    response.body() = scripted.body.dump();
    response.keep_alive(session->request.keep_alive());
    session->hang_up = scripted.hang_up;
    response.prepare_payload();
    session->delay.expires_after(std::chrono::milliseconds(scripted.delay_ms));
    session->delay.async_wait([this, session](boost::system::error_code) {
      --in_flight_;
      http::async_write(session->socket, session->response, [this, session](boost::system::error_code error, size_t) {
        if (!error && session->response.keep_alive() && !session->hang_up) return read(session);
        session->socket.shutdown(tcp::socket::shutdown_both, error);
      });
    });
  }

  Script script_;
  std::chrono::milliseconds idle_;
  boost::asio::io_context io_;
  tcp::acceptor acceptor_;
  boost::asio::steady_timer idle_timer_;
  std::thread thread_;
  unsigned short port_ = 0;
  std::atomic<int> served_{0}, in_flight_{0}, max_in_flight_{0}, connections_{0};
};

}  // namespace turnrl::tools
