#pragma once
// A causal language model for acting: batched generation with a KV cache and scoring of given
// replies. Torch-free header (pimpl), so rollouts and tools include it cheaply.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "agents/model/tokenizer.h"

namespace turnrl::agents {

class Qwen2Model;  // agents/qwen2_model.h (torch)

struct SamplingParams {
  float temperature = 1.0f;
  int top_k = 0;         // 0: off
  float top_p = 1.0f;    // 1: off
  int max_new_tokens = 64;
  bool greedy = false;
  uint64_t seed = 0;
  /** When non-empty, one sampling stream per prompt (instead of one for the batch from `seed`),
   *  so a reply does not depend on which batch its prompt landed in. */
  std::vector<uint64_t> row_seeds;
  /** When non-empty, the policy is restricted to these tokens (constrained decoding); scoring
   *  with the same list gives the log-probs of that restricted policy. */
  std::vector<int32_t> allowed_tokens;
};

struct Generation {
  std::vector<int32_t> ids;       // generated tokens, the stop token included when one was produced
  std::vector<float> logprobs;    // log-probability of each token under the distribution it was sampled from
  bool stopped = false;           // ended on a stop token (rather than max_new_tokens)
};

class LanguageModel {
 public:
  /** Loads a Hugging Face folder (config.json, model.safetensors or shards, tokenizer.json). */
  static std::unique_ptr<LanguageModel> load(const std::string& dir, const std::string& device = "cpu");
  /** Acts with a module owned elsewhere (the trainer's actor): generation sees its live weights. */
  static std::unique_ptr<LanguageModel> over(Qwen2Model module, Tokenizer tokenizer);
  ~LanguageModel();

  /** Prompts of different lengths are left-padded into one batch. */
  std::vector<Generation> generate(const std::vector<std::vector<int32_t>>& prompts, const SamplingParams& params);
  /** Log-probabilities (temperature 1) of each response token after its prompt. */
  std::vector<std::vector<float>> score(const std::vector<std::vector<int32_t>>& prompts,
                                        const std::vector<std::vector<int32_t>>& responses,
                                        const std::vector<int32_t>& allowed_tokens = {});
  void save(const std::string& dir);

  const Tokenizer& tokenizer() const;
  bool has_tokenizer() const;
  /** Tokens that end a reply: the tokenizer's (none for a bare model folder). */
  const std::vector<int32_t>& stop_ids() const;
  /** The decoder itself (torch: include agents/model/qwen2_model.h to use it). */
  Qwen2Model& module();
  int64_t parameter_count() const;
  /** Positions the model was built for (max_position_embeddings): prompt plus reply must fit. */
  int64_t context_length() const;

  struct Impl;

 private:
  explicit LanguageModel(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace turnrl::agents
