#pragma once
// Keys and values of prompt prefixes seen before, for the continuous-batching engine: a request
// whose prompt begins with a cached prefix starts from a copy of its entries and prefills only the
// rest. A prefix tree over token ids (edges hold runs of tokens and their entries), least recently
// used leaves evicted under a memory cap. Single-threaded (the engine's thread). Torch-free header.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "agents/model/model_config.h"

namespace turnrl::agents {

class SlotCache;

struct PrefixCacheStats {
  uint64_t lookups = 0;          // prompts looked up
  uint64_t hits = 0;             // of them, starting from a cached prefix
  uint64_t prompt_tokens = 0;    // their tokens
  uint64_t reused_tokens = 0;    // of them, restored instead of prefilled
  uint64_t evicted_tokens = 0;
  uint64_t cached_tokens = 0;    // now in the tree
  uint64_t bytes = 0, capacity_bytes = 0;
  double hit_rate() const { return lookups ? static_cast<double>(hits) / static_cast<double>(lookups) : 0.0; }
  double reused_share() const { return prompt_tokens ? static_cast<double>(reused_tokens) / static_cast<double>(prompt_tokens) : 0.0; }
};

class PrefixCache {
 public:
  /** `bytes_per_token`: one token's keys and values over every layer. */
  PrefixCache(uint64_t capacity_bytes, uint64_t bytes_per_token);
  ~PrefixCache();
  PrefixCache(const PrefixCache&) = delete;
  PrefixCache& operator=(const PrefixCache&) = delete;

  /** Copies the longest cached prefix of `tokens`, at most `limit` tokens, into the empty `slot`
   *  of `cache`; returns its length (0: nothing cached). Counts the lookup. */
  int64_t restore(const std::vector<int32_t>& tokens, int64_t limit, SlotCache& cache, int64_t slot);
  /** Keeps `slot`'s entries of tokens[0, count) (its first `count`), then evicts least recently
   *  used leaves down to the cap. */
  void store(const std::vector<int32_t>& tokens, int64_t count, const SlotCache& cache, int64_t slot);
  /** Length of the longest cached prefix of `tokens`; changes nothing. */
  int64_t match(const std::vector<int32_t>& tokens) const;
  const PrefixCacheStats& stats() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/** Bytes of one token's keys and values over every layer, entries of `element_bytes` each. */
uint64_t kv_bytes_per_token(const ModelConfig& config, uint64_t element_bytes);

}  // namespace turnrl::agents
