#pragma once
// The one HTTP/1.1 server loop of the project, for `turnrl serve` and the loopback test stubs:
// Boost.Beast on one I/O thread, keep-alive connections, and answers given whole or as a chunked
// stream, at once or later (a handler hands its responder to a timer or another thread's callback).
// Boost stays in http_server.cpp.
#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace turnrl::serve {

struct HttpRequest {
  std::string method;  // "GET", "POST", ...
  std::string target;  // the path with its query
  std::string body;
};

struct HttpReply {
  unsigned status = 200;
  std::string body;
  std::string content_type = "application/json";
  std::vector<std::pair<std::string, std::string>> headers = {};  // extra ones (e.g. Retry-After)
  bool hang_up = false;  // close the connection after the reply, unannounced (a keep-alive timeout, for tests)
};

class HttpConnection;

/** Where one request's answer goes: respond() once, or begin_stream(), chunks and end_stream().
 *  Call it on the server's loop (HttpServer::post from other threads); gone() from any thread. */
class HttpResponder {
 public:
  explicit HttpResponder(std::shared_ptr<HttpConnection> connection) : connection_(std::move(connection)) {}
  void respond(HttpReply reply) const;
  /** A 200 response with a chunked body of `content_type`. */
  void begin_stream(const std::string& content_type) const;
  void send_chunk(const std::string& data) const;
  void end_stream() const;
  /** The client went away (a write failed): what is still sent is dropped. */
  bool gone() const;

 private:
  std::shared_ptr<HttpConnection> connection_;
};

struct HttpServerOptions {
  std::string host = "127.0.0.1";
  unsigned short port = 0;                  // 0: a free port (see HttpServer::port)
  std::size_t body_limit = 16 << 20;        // a larger request body is answered with 413
  std::chrono::seconds idle_timeout{120};   // a keep-alive connection without a request is closed
  std::chrono::seconds write_timeout{60};   // a client that stops reading is dropped
  // The loop stops by itself after this long without a request (a stub that a failed test leaves behind).
  std::optional<std::chrono::milliseconds> stop_when_idle;
  // The reply to a request the loop refuses itself (413); the default is the message as plain text.
  std::function<HttpReply(unsigned status, const std::string& message)> error_reply;
};

class HttpServer {
 public:
  /** Called on the loop for each request; answers through the responder, now or later. */
  using Handler = std::function<void(HttpRequest request, HttpResponder responder)>;

  /** Binds host:port; throws std::invalid_argument when host is not an IP address and
   *  std::runtime_error when the address is taken. */
  HttpServer(HttpServerOptions options, Handler handler);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  unsigned short port() const;
  const std::string& host() const;
  /** Serves on the calling thread until stop() (or SIGINT/SIGTERM when `handle_signals`). */
  void run(bool handle_signals = false);
  /** Thread-safe. */
  void stop();
  /** Runs `task` on the loop, after `delay`. Thread-safe. */
  void post(std::function<void()> task, std::chrono::milliseconds delay = {});
  /** Connections accepted so far. */
  int connections() const;

 private:
  friend class HttpConnection;
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace turnrl::serve
