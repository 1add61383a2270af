#pragma once
// An OpenAI-compatible chat client (POST <base_url>/chat/completions) over Boost.Beast: per-request
// timeouts, retries with exponential backoff on timeouts, connection errors, 429 and 5xx, and a
// clear error naming the URL when the server cannot be reached. Plain http only (use a local
// proxy for TLS endpoints).
#include <string>

#include "agents/agent.h"

namespace turnrl::agents {

struct HttpAgentConfig {
  std::string base_url;     // e.g. http://127.0.0.1:8000/v1
  std::string model;        // the "model" field of the request
  std::string api_key_env;  // env var holding the API key; empty or unset: no Authorization header
  double timeout_s = 60.0;  // per attempt (connect, send, receive each)
  int retries = 3;          // attempts after the first
  double backoff_s = 0.5;   // wait before retry k: backoff_s * 2^k
  double temperature = 1.0;
  int max_tokens = 64;
  int concurrency = 8;      // requests of one act() call in flight at once (servers batch them)
};

class HttpAgent : public Agent {
 public:
  /** Throws std::invalid_argument for a malformed or non-http base_url. */
  explicit HttpAgent(HttpAgentConfig config);
  std::string name() const override { return "http:" + config_.model; }
  /** Up to `concurrency` requests at once, replies in prompt order; throws std::runtime_error
   *  when every attempt of a request fails. */
  std::vector<AgentReply> act(const std::vector<AgentPrompt>& prompts) override;
  /** One chat completion; the reply text. */
  std::string complete(const std::vector<memory::ChatMessage>& messages) const;

 private:
  HttpAgentConfig config_;
  std::string host_, port_, path_;
};

}  // namespace turnrl::agents
