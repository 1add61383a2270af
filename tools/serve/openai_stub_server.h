#pragma once
// A scripted OpenAI-compatible chat server on loopback (`/v1/chat/completions` only), for tests and
// `turnrl bench rollout` and `sweep`: the stub HTTP server with each scripted answer wrapped as a
// chat completion with a `usage` (hosted_api_traffic.h scripts a hosted API's latencies and faults).
#include <atomic>
#include <functional>
#include <memory>
#include <optional>
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
  // The reply's `usage`; unset: the bytes / 4, rounded up, of the request's messages and of `content`.
  std::optional<size_t> prompt_tokens = std::nullopt, completion_tokens = std::nullopt;
};

class OpenAiStubServer : public StubHttpServer {
 public:
  /** Called on the server's thread, one request at a time. */
  using ChatScript = std::function<ChatStubReply(int index, const nlohmann::json& request)>;

  explicit OpenAiStubServer(ChatScript script, double idle_s = 60.0)
      : OpenAiStubServer(std::move(script), idle_s, std::make_shared<UsageTotals>()) {}
  std::string base_url() const { return url("/v1"); }
  /** The sums of the `usage` of every completion answered (status 200). */
  size_t prompt_tokens() const { return usage_->prompt.load(); }
  size_t completion_tokens() const { return usage_->completion.load(); }

 private:
  struct UsageTotals {
    std::atomic<size_t> prompt{0}, completion{0};
  };

  OpenAiStubServer(ChatScript script, double idle_s, std::shared_ptr<UsageTotals> usage)
      : StubHttpServer(as_http(std::move(script), usage), idle_s), usage_(std::move(usage)) {}

  static size_t quarter(size_t bytes) { return (bytes + 3) / 4; }

  /** The request's message bytes / 4, rounded up: a stand-in for a tokenizer's count. */
  static size_t prompt_count(const nlohmann::json& request) {
    size_t bytes = 0;
    if (request.is_object() && request.contains("messages") && request["messages"].is_array()) {
      for (const auto& message : request["messages"]) {
        if (message.is_object() && message.contains("content") && message["content"].is_string()) bytes += message["content"].get_ref<const std::string&>().size();
      }
    }
    return quarter(bytes);
  }

  static Script as_http(ChatScript chat, std::shared_ptr<UsageTotals> usage) {
    return [chat = std::move(chat), usage = std::move(usage)](int index, const std::string& target, const nlohmann::json& request) {
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
        const size_t prompt = scripted.prompt_tokens.value_or(prompt_count(request));
        const size_t completion = scripted.completion_tokens.value_or(quarter(scripted.content.size()));
        reply.body["usage"] = {{"prompt_tokens", prompt}, {"completion_tokens", completion}, {"total_tokens", prompt + completion}};
        usage->prompt += prompt;
        usage->completion += completion;
      } else {
        reply.body = {{"error", "scripted failure"}};
      }
      return reply;
    };
  }

  std::shared_ptr<UsageTotals> usage_;
};

}  // namespace turnrl::serve
