#include "trainer/algo/ppo_loss.h"

namespace turnrl::trainer {

torch::Tensor masked_mean(const torch::Tensor& x, const torch::Tensor& mask, const torch::Tensor& tokens) {
  const torch::Tensor m = mask.to(x.scalar_type());
  return (x * m).sum() / (tokens.defined() ? tokens.to(m.scalar_type()) : m.sum()).clamp_min(1.0);
}

PolicyLoss policy_loss(const torch::Tensor& logprobs, const torch::Tensor& old_logprobs, const torch::Tensor& advantages,
                       const torch::Tensor& mask, const PolicyLossParams& params, const torch::Tensor& tokens) {
  const torch::Tensor log_ratio = (logprobs - old_logprobs).masked_fill(mask.logical_not(), 0.0);
  const torch::Tensor ratio = log_ratio.exp();
  const torch::Tensor unclipped = -advantages * ratio;
  const torch::Tensor clipped = -advantages * ratio.clamp(1.0 - params.clip, 1.0 + params.clip);
  torch::Tensor loss = torch::max(unclipped, clipped);
  if (params.dual_clip > 1.0) {
    // For negative advantages the loss is also bounded by -dual_clip * A.
    const torch::Tensor bounded = torch::min(loss, -advantages * params.dual_clip);
    loss = torch::where(advantages < 0, bounded, loss);
  }
  PolicyLoss out;
  out.loss = masked_mean(loss, mask, tokens);
  out.clip_fraction = masked_mean((clipped > unclipped).to(torch::kFloat32), mask, tokens).detach();
  out.approx_kl = masked_mean(-log_ratio, mask, tokens).detach();
  return out;
}

torch::Tensor anchor_kl(const torch::Tensor& log_distributions, const torch::Tensor& reference_log_distributions, const torch::Tensor& mask,
                        const torch::Tensor& tokens) {
  const torch::Tensor p_ref = reference_log_distributions.exp();
  // Tokens the reference never emits (p 0, both log-probs -inf where a vocabulary is restricted) add nothing.
  const torch::Tensor terms = torch::where(p_ref > 0, p_ref * (reference_log_distributions - log_distributions), torch::zeros_like(p_ref));
  return masked_mean(terms.sum(-1), mask, tokens);
}

torch::Tensor value_loss(const torch::Tensor& values, const torch::Tensor& old_values, const torch::Tensor& returns,
                         const torch::Tensor& mask, const torch::Tensor& weights, double value_clip, const torch::Tensor& tokens) {
  const torch::Tensor clipped = old_values + (values - old_values).clamp(-value_clip, value_clip);
  const torch::Tensor loss = torch::max((values - returns).pow(2), (clipped - returns).pow(2)) * weights;
  return 0.5 * masked_mean(loss, mask, tokens);
}

}  // namespace turnrl::trainer
