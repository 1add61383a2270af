#pragma once
// Continuous batching: a request joins the running batch at the next decoding step and leaves it as
// soon as it finishes, each sequence in its own KV-cache slot, so a short reply is never padded to
// the longest one in flight. Step-driven and single-threaded (GenerationEngine runs it on a thread
// of its own). Torch-free header.
#include <cstddef>
#include <exception>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "agents/model/language_model.h"
#include "agents/model/prefix_cache.h"

namespace turnrl::agents {

struct GenerationResult {
  Generation generation;      // ids (a stop token included), sampling log-probs, stopped on a stop token
  std::string text;           // the reply: stop token and stop string excluded; empty without a tokenizer
  std::string finish_reason;  // "stop" (a stop token or string), "length" or "cancelled"
  std::exception_ptr error;   // the request failed; the other fields are then partial
};

struct GenerationRequest {
  std::vector<int32_t> prompt;
  /** Sampling as LanguageModel::generate; `seed` seeds this request's own stream (row_seeds is
   *  unused), so its reply does not depend on what else is in flight. max_new_tokens is capped to
   *  the room the context leaves after the prompt. */
  SamplingParams params;
  /** Stop strings: the reply ends before the first one (needs the model's tokenizer). */
  std::vector<std::string> stop;
  /** The reply text as it grows (a tail that may begin a stop string is held back until it cannot);
   *  return false to cancel the request. Optional. */
  std::function<bool(const std::string& piece)> on_text;
  /** Called once, with the finished reply or its error. */
  std::function<void(GenerationResult&&)> on_done;
};

/** Where the engine's time went, and what its prefix cache saved. */
struct BatcherStats {
  double prefill_seconds = 0.0;  // admitting requests: their prompts' forward passes
  double decode_seconds = 0.0;   // one token for every running sequence, step after step
  uint64_t prefilled_tokens = 0; // prompt tokens computed (those the cache held are not)
  PrefixCacheStats prefix_cache; // all zero without a cache
};

class ContinuousBatcher {
 public:
  /** At most `max_batch` sequences decode together; further requests wait their turn. With
   *  `prefix_cache_bytes` > 0, prompts start from the cached entries of their longest prefix seen
   *  before (agents/model/prefix_cache.h), up to that much memory. */
  ContinuousBatcher(LanguageModel& model, int max_batch, uint64_t prefix_cache_bytes = 0);
  ~ContinuousBatcher();

  /** Throws std::invalid_argument for an empty prompt, one that leaves no room in the context, an
   *  out-of-vocabulary id, empty stop strings, or stop strings without a tokenizer. */
  void check(const GenerationRequest& request) const;
  /** Queues a request (checked first); it starts at the next step with room in the batch. */
  void add(GenerationRequest request);
  /** Admits waiting requests (a prefill each, which samples their first token), then decodes one
   *  token for every running sequence. Finished requests' on_done runs here. */
  void step();
  bool idle() const { return waiting() == 0 && running() == 0; }
  BatcherStats stats() const;
  size_t waiting() const;
  size_t running() const;
  /** Ends every waiting and running request with `error`. */
  void fail_all(const std::exception_ptr& error);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace turnrl::agents
