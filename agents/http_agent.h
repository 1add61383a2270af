#pragma once
// An OpenAI-compatible chat client (POST <base_url>/chat/completions) over Boost.Asio/Beast, on
// its own I/O thread: each submitted prompt is one request, answered as soon as its reply arrives
// (no batch barrier), over a pool of keep-alive connections (up to `concurrency` requests in
// flight). Per-attempt timeouts, retries with exponential backoff on timeouts, connection errors,
// 429 and 5xx (waiting instead what a server's Retry-After asks, as hosted APIs expect), a
// client-side budget of requests and tokens per minute that every attempt waits its turn in
// (request_budget.h; a timer, not a blocked thread), and a clear error naming the URL when the
// server cannot be reached. Plain http only (use a local proxy for TLS endpoints).
#include <memory>
#include <string>

#include "agents/agent.h"

namespace turnrl::agents {

struct HttpAgentConfig {
  std::string base_url;     // e.g. http://127.0.0.1:8000/v1
  std::string model;        // the "model" field of the request
  std::string api_key_env;  // env var holding the API key; empty or unset: no Authorization header
  double timeout_s = 60.0;  // per attempt: connecting, then sending and receiving
  int retries = 3;          // attempts after the first
  double backoff_s = 0.5;   // wait before retry k: backoff_s * 2^k, unless the answer had a Retry-After
  double temperature = 1.0;
  int max_tokens = 64;
  int concurrency = 8;      // requests in flight at once, each on its own keep-alive connection
  double requests_per_minute = 0;  // client-side budget, retries included; 0: none
  double tokens_per_minute = 0;    // prompt + completion tokens as the server's usage counts them; 0: none
};

class HttpAgent : public Agent {
 public:
  /** Throws std::invalid_argument for a malformed or non-http base_url. */
  explicit HttpAgent(HttpAgentConfig config);
  /** Requests still in flight are answered with an error. */
  ~HttpAgent() override;
  std::string name() const override { return "http:" + config_.model; }
  /** Sends the request (with the prompt's seed as `seed`, a signed 64-bit image) and returns at once;
   *  `on_reply` runs on the agent's I/O thread. An error after every attempt, or an HTTP error
   *  other than 429 and 5xx, comes back as AgentResult::error (std::runtime_error). */
  void submit(AgentPrompt prompt, ReplyHandler on_reply) override;
  bool asynchronous() const override { return true; }
  bool batched_act() const override { return false; }
  /** Every prompt submitted at once, replies in prompt order; throws the first error. */
  std::vector<AgentReply> act(const std::vector<AgentPrompt>& prompts) override;
  /** One chat completion; the reply text. */
  std::string complete(const std::vector<memory::ChatMessage>& messages);

  struct Impl;

 private:
  HttpAgentConfig config_;
  std::unique_ptr<Impl> impl_;
};

}  // namespace turnrl::agents
