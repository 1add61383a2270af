#include "trainer/ppo_update.h"

#include <algorithm>
#include <numeric>

#include "agents/model/generation.h"
#include "trainer/ppo_loss.h"

namespace turnrl::trainer {
namespace {

/** Right-aligns per-row vectors into a [B, width] tensor (zeros elsewhere). */
torch::Tensor right_aligned(const std::vector<const std::vector<float>*>& rows, int64_t width) {
  torch::Tensor out = torch::zeros({static_cast<int64_t>(rows.size()), width});
  auto a = out.accessor<float, 2>();
  for (size_t b = 0; b < rows.size(); ++b) {
    const auto& row = *rows[b];
    for (size_t j = 0; j < row.size(); ++j) a[b][width - static_cast<int64_t>(row.size()) + static_cast<int64_t>(j)] = row[j];
  }
  return out;
}

/** One clipped value-loss step on a mini-batch: positions 0..L of each turn, the first weighted
 *  more (Verlog's highlight_first). Returns the loss. */
torch::Tensor critic_step(LearnerState& learner, const agents::ResponseBatch& mb, const std::vector<std::vector<int32_t>>& responses,
                          const std::vector<const std::vector<float>*>& old_v, const std::vector<const std::vector<float>*>& ret) {
  const TrainConfig::Ppo& ppo = learner.config.ppo;
  const int64_t r = mb.response_width, rows = static_cast<int64_t>(responses.size());
  const torch::Tensor values = agents::response_values(learner.critic, mb);
  torch::Tensor value_mask = torch::zeros({rows, r + 1}, torch::kBool);
  torch::Tensor weights = torch::ones({rows, r + 1});
  for (int64_t b = 0; b < rows; ++b) {
    const int64_t first = r - static_cast<int64_t>(responses[b].size());
    value_mask[b].narrow(0, first, r + 1 - first).fill_(true);
    weights[b][first] = ppo.first_token_weight;
  }
  const torch::Tensor vl = value_loss(values, right_aligned(old_v, r + 1).to(learner.device), right_aligned(ret, r + 1).to(learner.device),
                                      value_mask.to(learner.device), weights.to(learner.device), ppo.value_clip);
  clipped_step(*learner.critic_optimizer, learner.critic->parameters(), vl, ppo.grad_clip);
  return vl.detach().cpu();
}

}  // namespace

double clipped_step(torch::optim::Optimizer& optimizer, const std::vector<torch::Tensor>& parameters, const torch::Tensor& loss,
                    double max_norm) {
  optimizer.zero_grad();
  loss.backward();
  const double norm = torch::nn::utils::clip_grad_norm_(parameters, max_norm);
  optimizer.step();
  return norm;
}

nlohmann::json ppo_update(LearnerState& learner, const RolloutBatch& batch, const TrainingTargets& targets, bool train_actor,
                          size_t max_rows) {
  const TrainConfig::Ppo& ppo = learner.config.ppo;
  std::vector<size_t> order(batch.turns.size());
  std::iota(order.begin(), order.end(), 0);
  std::shuffle(order.begin(), order.end(), learner.shuffle_rng);
  if (max_rows < order.size()) order.resize(max_rows);
  torch::Tensor policy_loss_sum = torch::zeros({}), value_loss_sum = torch::zeros({}), entropy_sum = torch::zeros({});
  torch::Tensor clip_sum = torch::zeros({}), kl_sum = torch::zeros({});
  double grad_norm_sum = 0;
  int steps = 0;
  const size_t minibatch = static_cast<size_t>(ppo.minibatch);
  for (int epoch = 0; epoch < ppo.epochs; ++epoch) {
    if (epoch > 0) std::shuffle(order.begin(), order.end(), learner.shuffle_rng);
    for (size_t start = 0; start < order.size(); start += minibatch) {
      const size_t end = std::min(order.size(), start + minibatch);
      std::vector<std::vector<int32_t>> prompts, responses;
      std::vector<const std::vector<float>*> old_lp, adv, old_v, ret;
      for (size_t j = start; j < end; ++j) {
        const size_t i = order[j];
        prompts.push_back(batch.turns[i].prompt_ids);
        responses.push_back(batch.turns[i].response_ids);
        old_lp.push_back(&targets.old_logprobs[i]);
        adv.push_back(&targets.advantages[i]);
        old_v.push_back(&targets.old_values[i]);
        ret.push_back(&targets.returns[i]);
      }
      const agents::ResponseBatch mb = agents::make_response_batch(prompts, responses, learner.pad_id, learner.device);
      const int64_t r = mb.response_width;
      if (train_actor && r > 0) {
        torch::Tensor entropy;
        const torch::Tensor logp = agents::response_logprobs(learner.actor, mb, learner.allowed_tokens, &entropy);
        const PolicyLoss pl = policy_loss(logp, right_aligned(old_lp, r).to(learner.device), right_aligned(adv, r).to(learner.device),
                                          mb.response_mask, {ppo.clip, ppo.dual_clip});
        const torch::Tensor entropy_mean = masked_mean(entropy, mb.response_mask);
        const torch::Tensor loss = pl.loss - ppo.entropy_coef * entropy_mean;
        grad_norm_sum += clipped_step(*learner.actor_optimizer, learner.actor->parameters(), loss, ppo.grad_clip);
        policy_loss_sum += pl.loss.detach().cpu();
        entropy_sum += entropy_mean.detach().cpu();
        clip_sum += pl.clip_fraction.cpu();
        kl_sum += pl.approx_kl.cpu();
      }
      if (learner.uses_critic()) value_loss_sum += critic_step(learner, mb, responses, old_v, ret);
      ++steps;
    }
  }
  const double denom = std::max(1, steps);
  nlohmann::json m;
  if (learner.uses_critic()) m["value_loss"] = value_loss_sum.item<double>() / denom;
  if (train_actor) {
    m["policy_loss"] = policy_loss_sum.item<double>() / denom;
    m["entropy"] = entropy_sum.item<double>() / denom;
    m["clip_fraction"] = clip_sum.item<double>() / denom;
    m["ppo_kl"] = kl_sum.item<double>() / denom;
    m["grad_norm"] = grad_norm_sum / denom;
  }
  return m;
}

}  // namespace turnrl::trainer
