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

/** Token-mean clipped surrogate over `mask` (dual-clip for negative advantages). */
PolicyLoss policy_loss(const torch::Tensor& logprobs, const torch::Tensor& old_logprobs, const torch::Tensor& advantages,
                       const torch::Tensor& mask, const PolicyLossParams& params);

/** 0.5 * weighted token-mean of max((v - R)^2, (clip(v, v_old +- value_clip) - R)^2). */
torch::Tensor value_loss(const torch::Tensor& values, const torch::Tensor& old_values, const torch::Tensor& returns,
                         const torch::Tensor& mask, const torch::Tensor& weights, double value_clip);

torch::Tensor masked_mean(const torch::Tensor& x, const torch::Tensor& mask);

}  // namespace turnrl::trainer
