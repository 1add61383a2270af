#pragma once
// Batched generation and response scoring on a Qwen2 module: shared by the LanguageModel facade
// (acting, evaluation) and the trainer (which owns the modules it optimises). Torch header.
#include <random>
#include <utility>
#include <vector>

#include "agents/model/language_model.h"
#include "agents/model/qwen2_model.h"

namespace turnrl::agents {

/** The tokens sampling chooses among: `params.allowed_tokens`, or the whole vocabulary. */
std::vector<int32_t> sampling_candidates(const SamplingParams& params, int64_t vocab);
/** Samples one token from float32 logits (greedy, temperature, top-k, top-p); returns it with its
 *  log-prob under the sampling distribution. `weight` and `order` are scratch. */
std::pair<int32_t, float> sample_token(const float* logits, const std::vector<int32_t>& candidates, const SamplingParams& params,
                                       std::mt19937_64& rng, std::vector<double>& weight, std::vector<int32_t>& order);

/** Left-padded prompts and their sampled tokens with the KV cache. */
std::vector<Generation> generate_tokens(Qwen2Model& model, const std::vector<std::vector<int32_t>>& prompts,
                                        const SamplingParams& params, int32_t pad_id, const std::vector<int32_t>& stop_ids);

/**
 * prompt + response rows, left-padded to one width W, so every response ends at column W - 1.
 * `response_mask` [B, R] marks real response tokens, right-aligned (R = longest response).
 */
struct ResponseBatch {
  torch::Tensor ids, key_mask, positions;  // [B, W]
  torch::Tensor response_ids;              // [B, R], right-aligned, pad where masked
  torch::Tensor response_mask;             // [B, R] bool
  int64_t width = 0, response_width = 0;
};
ResponseBatch make_response_batch(const std::vector<std::vector<int32_t>>& prompts,
                                  const std::vector<std::vector<int32_t>>& responses, int32_t pad_id, const torch::Device& device);

/** Log-softmax [B, R, V] at each response position over the vocabulary (only `allowed_tokens`
 *  when given; the rest -inf), autograd kept. */
torch::Tensor response_log_distributions(Qwen2Model& model, const ResponseBatch& batch, const std::vector<int32_t>& allowed_tokens);
/** The response tokens' entries [B, R] of such log-distributions, and their entropies [B, R] when asked. */
torch::Tensor response_token_logprobs(const torch::Tensor& log_distributions, const ResponseBatch& batch, torch::Tensor* entropy = nullptr);
/** Log-probs [B, R] of the response tokens (autograd kept; masked entries are meaningless). */
torch::Tensor response_logprobs(Qwen2Model& model, const ResponseBatch& batch, const std::vector<int32_t>& allowed_tokens,
                                torch::Tensor* entropy = nullptr);
/** Values [B, R + 1] at the prompt end and after each response token (right-aligned like the mask). */
torch::Tensor response_values(Qwen2Model& critic, const ResponseBatch& batch);

}  // namespace turnrl::agents
