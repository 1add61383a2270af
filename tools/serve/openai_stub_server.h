#pragma once
// A scripted OpenAI-compatible chat server on loopback (`/v1/chat/completions` only), for tests and
// `turnrl bench rollout` and `sweep`: the stub HTTP server with each scripted answer wrapped as a
// chat completion (hosted_api_traffic.h scripts a hosted API's latencies and faults).
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "tools/serve/stub_http_server.h"

namespace turnrl::serve {

struct ChatStubReply {
  unsigned status = 200;
  std::string content;  // the assistant message (status 200)
  int delay_ms = 0;     // wait before answering (latency; client timeouts)
  bool hang_up = false; // close the connection after answering, unannounced (a keep-alive timeout)
  std::string finish_reason = "stop";
  std::vector<std::pair<std::string, std::string>> headers = {};  // extra ones (e.g. Retry-After)
};

class OpenAiStubServer : public StubHttpServer {
 public:
  /** Called on the server's thread, one request at a time. */
  using ChatScript = std::function<ChatStubReply(int index, const nlohmann::json& request)>;

  explicit OpenAiStubServer(ChatScript script, double idle_s = 60.0) : StubHttpServer(as_http(std::move(script)), idle_s) {}
  std::string base_url() const { return url("/v1"); }

 private:
  static Script as_http(ChatScript chat) {
    return [chat = std::move(chat)](int index, const std::string& target, const nlohmann::json& request) {
      const ChatStubReply scripted = chat(index, request);
      StubReply reply{scripted.status, nlohmann::json::object(), scripted.delay_ms, scripted.hang_up, scripted.headers};
      if (target != "/v1/chat/completions") {
        reply.status = 404;
        reply.body = {{"error", "unknown path"}};
      } else if (scripted.status == 200) {
        reply.body = {{"choices",
                       {{{"index", 0},
                         {"message", {{"role", "assistant"}, {"content", scripted.content}}},
                         {"finish_reason", scripted.finish_reason}}}}};
      } else {
        reply.body = {{"error", "scripted failure"}};
      }
      return reply;
    };
  }
};

}  // namespace turnrl::serve
