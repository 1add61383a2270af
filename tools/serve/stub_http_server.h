#pragma once
// A scripted JSON-over-HTTP server on loopback, for tests and benchmarks (a reward scorer, an
// OpenAI-compatible chat server through openai_stub_server.h): a handler on the project's HTTP
// server loop (http_server.h), run on a thread of its own; 127.0.0.1 only, an ephemeral port.
// A delay is a timer, not a sleeping thread, so hundreds of requests wait at once; it stops by
// itself after `idle_s` without a request.
#include <atomic>
#include <functional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "tools/serve/http_server.h"

namespace turnrl::serve {

struct StubReply {
  unsigned status = 200;
  nlohmann::json body = nlohmann::json::object();
  int delay_ms = 0;      // wait before answering (a server's latency, or a client timeout to provoke)
  bool hang_up = false;  // close the connection after answering, unannounced (a keep-alive timeout)
  std::vector<std::pair<std::string, std::string>> headers = {};  // extra ones (e.g. Retry-After)
};

class StubHttpServer {
 public:
  /** Called on the server's thread, one request at a time. `index`: the request's number from 0;
   *  `target`: its path; `request`: its body (discarded JSON when unreadable). */
  using Script = std::function<StubReply(int index, const std::string& target, const nlohmann::json& request)>;

  explicit StubHttpServer(Script script, double idle_s = 60.0);
  ~StubHttpServer();
  StubHttpServer(const StubHttpServer&) = delete;
  StubHttpServer& operator=(const StubHttpServer&) = delete;

  unsigned short port() const { return server_.port(); }
  std::string url(const std::string& path) const { return "http://127.0.0.1:" + std::to_string(port()) + path; }
  int requests() const { return served_.load(); }
  int connections() const { return server_.connections(); }
  /** Most requests being answered at the same time. */
  int max_in_flight() const { return max_in_flight_.load(); }

 private:
  void answer(const HttpRequest& request, const HttpResponder& responder);

  Script script_;
  std::atomic<int> served_{0}, in_flight_{0}, max_in_flight_{0};
  HttpServer server_;  // after what its handler uses
  std::thread thread_;
};

}  // namespace turnrl::serve
