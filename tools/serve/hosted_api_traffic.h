#pragma once
// A hosted chat API's traffic for the loopback stub (openai_stub_server.h): latencies drawn from a
// log-normal (a median and a sigma: a heavy tail), a share of requests refused at once with 429
// and a Retry-After of 1 s, a share failed with 503 after their latency. Each draw comes from the
// request's seed (an episode turn's) and how often that seed came before, so two runs of the same
// episodes, in any order (asynchronous or lock-step), meet the same latencies and faults.
#include <atomic>
#include <cstdint>
#include <map>
#include <string>

#include "tools/serve/openai_stub_server.h"

namespace turnrl::serve {

struct HostedApiProfile {
  double median_ms = 800.0, sigma = 1.0;  // of the log-normal latency
  double rate_429 = 0.02, rate_5xx = 0.01;
  // Multiplies every latency and the Retry-After (sent as OpenAI's `retry-after-ms` beside the
  // `Retry-After: 1` in whole seconds): a shorter run, the same ratios.
  double time_scale = 1.0;
  uint64_t seed = 0;
};

class HostedApiTraffic {
 public:
  /** Throws std::invalid_argument for a negative median, sigma or scale, or rates outside [0, 1]. */
  explicit HostedApiTraffic(HostedApiProfile profile);
  /** The answer to the next attempt of the request with `request_seed`: `content` (status 200),
   *  429 or 503. From one thread at a time (the stub's). */
  ChatStubReply answer(uint64_t request_seed, const std::string& content);
  int rate_limited() const { return rate_limited_.load(); }
  int server_errors() const { return server_errors_.load(); }

 private:
  HostedApiProfile profile_;
  std::map<uint64_t, int> attempts_;  // request seed -> attempts answered
  std::atomic<int> rate_limited_{0}, server_errors_{0};
};

}  // namespace turnrl::serve
