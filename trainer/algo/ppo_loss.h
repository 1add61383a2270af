#pragma once
// PPO's clipped losses over masked token positions. Metrics come back as detached tensors so an
// update reduces them once, not per mini-batch.
#include <torch/torch.h>

namespace turnrl::trainer {

struct PolicyLossParams {
  double clip = 0.2;
  double dual_clip = 3.0;  // bound on the loss for negative advantages (<= 1 disables)
};

struct PolicyLoss {
  torch::Tensor loss;          // scalar, with autograd
  torch::Tensor clip_fraction; // detached
  torch::Tensor approx_kl;     // detached, mean(old - new)
};

// Every token mean divides by `tokens` when given (a scalar tensor): the count of the whole
// mini-batch when `mask` holds only this rank's share of it (data-parallel), so that the ranks'
// losses sum to the mini-batch's. Undefined: the positions of `mask`.

/** Token-mean clipped surrogate over `mask` (dual-clip for negative advantages). */
PolicyLoss policy_loss(const torch::Tensor& logprobs, const torch::Tensor& old_logprobs, const torch::Tensor& advantages,
                       const torch::Tensor& mask, const PolicyLossParams& params, const torch::Tensor& tokens = {});

/** 0.5 * weighted token-mean of max((v - R)^2, (clip(v, v_old +- value_clip) - R)^2). */
torch::Tensor value_loss(const torch::Tensor& values, const torch::Tensor& old_values, const torch::Tensor& returns,
                         const torch::Tensor& mask, const torch::Tensor& weights, double value_clip, const torch::Tensor& tokens = {});

/** Token-mean over `mask` of KL(reference || policy) summed over the whole vocabulary, from
 *  log-distributions [B, R, V]. Unlike the KL of the sampled reply, it grows without bound as the
 *  policy drops a token the reference gives weight, so it keeps rare actions alive. */
torch::Tensor anchor_kl(const torch::Tensor& log_distributions, const torch::Tensor& reference_log_distributions, const torch::Tensor& mask,
                        const torch::Tensor& tokens = {});

/** sum(x over mask) / max(tokens, 1). */
torch::Tensor masked_mean(const torch::Tensor& x, const torch::Tensor& mask, const torch::Tensor& tokens = {});

}  // namespace turnrl::trainer
