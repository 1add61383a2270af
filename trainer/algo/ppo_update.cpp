#include "trainer/algo/ppo_update.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <optional>
#include <stdexcept>

#include "agents/model/generation.h"
#include "trainer/dist/distributed.h"
#include "trainer/algo/ppo_loss.h"

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

/** Where this rank's rows sit in the combined batch: the ranks' collections side by side as one
 *  collection of all their slots, rank by rank (row t * N + the rank's first slot + i, N the slots
 *  of every rank), as one process with all the slots would hold them. */
struct CombinedRows {
  size_t total = 0;
  std::vector<int64_t> local;  // per combined row: this rank's row, or -1
};

CombinedRows combined_rows(ProcessGroup* ranks, const RolloutBatch& batch) {
  CombinedRows rows;
  if (!ranks) {
    rows.total = batch.turns.size();
    rows.local.resize(rows.total);
    std::iota(rows.local.begin(), rows.local.end(), 0);
    return rows;
  }
  if (batch.turns.size() != static_cast<size_t>(batch.n_env) * batch.e_len) {
    throw std::logic_error("ppo_update: a rank's batch needs n_env x e_len turns");
  }
  std::vector<double> shapes(2 * static_cast<size_t>(ranks->size()), 0.0);
  shapes[2 * ranks->rank()] = batch.n_env;
  shapes[2 * ranks->rank() + 1] = batch.e_len;
  ranks->sum(shapes);
  int64_t slots = 0, first_slot = 0;
  for (int r = 0; r < ranks->size(); ++r) {
    if (shapes[2 * r + 1] != batch.e_len) throw std::logic_error("ppo_update: the ranks' batches have different e_len");
    if (r == ranks->rank()) first_slot = slots;
    slots += static_cast<int64_t>(shapes[2 * r]);
  }
  rows.total = static_cast<size_t>(slots) * batch.e_len;
  rows.local.assign(rows.total, -1);
  for (int64_t t = 0; t < batch.e_len; ++t) {
    for (int64_t i = 0; i < batch.n_env; ++i) rows.local[t * slots + first_slot + i] = t * batch.n_env + i;
  }
  return rows;
}

/** One mini-batch: this rank's rows of it, and the token counts of the whole mini-batch (all ranks). */
struct MiniBatch {
  std::vector<size_t> rows;
  double response_tokens = 0;  // the policy loss's token mean
  double value_positions = 0;  // the value loss's: L + 1 per turn
};

/** The combined rows' token counts (prompt and response), the same on every rank. */
std::vector<double> combined_lengths(ProcessGroup* ranks, const RolloutBatch& batch, const CombinedRows& combined) {
  std::vector<double> lengths(combined.total, 0.0);
  for (size_t c = 0; c < combined.total; ++c) {
    if (const int64_t row = combined.local[c]; row >= 0) {
      lengths[c] = static_cast<double>(batch.turns[row].prompt_ids.size() + batch.turns[row].response_ids.size());
    }
  }
  if (ranks) ranks->sum(lengths);
  return lengths;
}

/** Every epoch's shuffled mini-batches of at most `max_rows` combined rows; their counts cross the
 *  ranks in one message. With `ppo.group_by_length`, rows of like length share a mini-batch (a
 *  forward pads every row to the longest), ties broken by the shuffle, and the epoch's mini-batches
 *  run in shuffled order, so no epoch goes from short rows to long ones. */
std::vector<MiniBatch> plan_minibatches(LearnerState& learner, const RolloutBatch& batch, size_t max_rows) {
  const TrainConfig::Ppo& ppo = learner.config.ppo;
  const CombinedRows combined = combined_rows(learner.ranks.get(), batch);
  std::vector<size_t> order(combined.total);
  std::iota(order.begin(), order.end(), 0);
  std::shuffle(order.begin(), order.end(), learner.shuffle_rng);
  if (max_rows < order.size()) order.resize(max_rows);
  std::vector<double> lengths;
  if (ppo.group_by_length) lengths = combined_lengths(learner.ranks.get(), batch, combined);
  std::vector<MiniBatch> plan;
  const size_t minibatch = static_cast<size_t>(ppo.minibatch);
  for (int epoch = 0; epoch < ppo.epochs; ++epoch) {
    if (epoch > 0) std::shuffle(order.begin(), order.end(), learner.shuffle_rng);
    if (ppo.group_by_length) std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return lengths[a] < lengths[b]; });
    const size_t epoch_start = plan.size();
    for (size_t start = 0; start < order.size(); start += minibatch) {
      MiniBatch mb;
      for (size_t j = start; j < std::min(order.size(), start + minibatch); ++j) {
        const int64_t row = combined.local[order[j]];
        if (row < 0) continue;
        mb.rows.push_back(static_cast<size_t>(row));
        mb.response_tokens += static_cast<double>(batch.turns[row].response_ids.size());
        mb.value_positions += static_cast<double>(batch.turns[row].response_ids.size() + 1);
      }
      plan.push_back(std::move(mb));
    }
    if (ppo.group_by_length) std::shuffle(plan.begin() + static_cast<std::ptrdiff_t>(epoch_start), plan.end(), learner.shuffle_rng);
  }
  if (learner.ranks) {
    std::vector<double> counts;
    for (const MiniBatch& mb : plan) counts.insert(counts.end(), {mb.response_tokens, mb.value_positions});
    learner.ranks->sum(counts);
    for (size_t i = 0; i < plan.size(); ++i) {
      plan[i].response_tokens = counts[2 * i];
      plan[i].value_positions = counts[2 * i + 1];
    }
  }
  return plan;
}

/** The kept reference log-distributions of `rows`, right-aligned to [B, R, V] like the mini-batch's
 *  response positions; the padding positions -inf, which the anchor term weighs 0. */
torch::Tensor kept_reference(const std::vector<torch::Tensor>& kept, const std::vector<size_t>& rows, int64_t r) {
  const torch::Tensor& first = kept[rows.front()];
  torch::Tensor out = torch::full({static_cast<int64_t>(rows.size()), r, first.size(-1)}, -INFINITY, first.options());
  for (size_t b = 0; b < rows.size(); ++b) {
    const torch::Tensor& row = kept[rows[b]];
    out[static_cast<int64_t>(b)].narrow(0, r - row.size(0), row.size(0)).copy_(row);
  }
  return out;
}

torch::Tensor count_tensor(double count, const torch::Device& device) {
  return torch::scalar_tensor(count, torch::TensorOptions().dtype(torch::kFloat32).device(device));
}

/** One clipped value-loss step on a mini-batch: positions 0..L of each turn, the first weighted
 *  more (Verlog's highlight_first). Returns the loss (this rank's share of it). */
torch::Tensor critic_step(LearnerState& learner, const agents::ResponseBatch* mb, const std::vector<std::vector<int32_t>>& responses,
                          const std::vector<const std::vector<float>*>& old_v, const std::vector<const std::vector<float>*>& ret,
                          double value_positions) {
  const TrainConfig::Ppo& ppo = learner.config.ppo;
  torch::Tensor vl;
  if (mb) {
    const int64_t r = mb->response_width, rows = static_cast<int64_t>(responses.size());
    const torch::Tensor values = agents::response_values(learner.critic, *mb);
    torch::Tensor value_mask = torch::zeros({rows, r + 1}, torch::kBool);
    torch::Tensor weights = torch::ones({rows, r + 1});
    for (int64_t b = 0; b < rows; ++b) {
      const int64_t first = r - static_cast<int64_t>(responses[b].size());
      value_mask[b].narrow(0, first, r + 1 - first).fill_(true);
      weights[b][first] = ppo.first_token_weight;
    }
    vl = value_loss(values, right_aligned(old_v, r + 1).to(learner.device), right_aligned(ret, r + 1).to(learner.device),
                    value_mask.to(learner.device), weights.to(learner.device), ppo.value_clip,
                    count_tensor(value_positions, learner.device));
  }
  clipped_step(*learner.critic_optimizer, learner.critic->parameters(), vl, ppo.grad_clip, learner.ranks.get());
  return vl.defined() ? vl.detach().cpu() : torch::zeros({});
}

}  // namespace

double clipped_step(torch::optim::Optimizer& optimizer, const std::vector<torch::Tensor>& parameters, const torch::Tensor& loss,
                    double max_norm, ProcessGroup* ranks) {
  optimizer.zero_grad();
  if (loss.defined()) loss.backward();
  if (ranks) ranks->sum_gradients(parameters);
  const double norm = torch::nn::utils::clip_grad_norm_(parameters, max_norm);
  optimizer.step();
  return norm;
}

nlohmann::json ppo_update(LearnerState& learner, const RolloutBatch& batch, const TrainingTargets& targets, bool train_actor,
                          size_t max_rows) {
  const TrainConfig::Ppo& ppo = learner.config.ppo;
  const std::vector<MiniBatch> plan = plan_minibatches(learner, batch, max_rows);
  torch::Tensor policy_loss_sum = torch::zeros({}), value_loss_sum = torch::zeros({}), entropy_sum = torch::zeros({});
  torch::Tensor clip_sum = torch::zeros({}), kl_sum = torch::zeros({}), anchor_sum = torch::zeros({});
  double grad_norm_sum = 0;
  double positions = 0, padded_positions = 0;  // token positions the update's forward passes compute, padding included
  for (const MiniBatch& minibatch : plan) {
    std::vector<std::vector<int32_t>> prompts, responses;
    std::vector<const std::vector<float>*> old_lp, adv, old_v, ret;
    for (size_t i : minibatch.rows) {
      prompts.push_back(batch.turns[i].prompt_ids);
      responses.push_back(batch.turns[i].response_ids);
      old_lp.push_back(&targets.old_logprobs[i]);
      adv.push_back(&targets.advantages[i]);
      old_v.push_back(&targets.old_values[i]);
      ret.push_back(&targets.returns[i]);
    }
    // A rank may hold none of a mini-batch's rows, or none with a response token: it adds no
    // gradient, but still takes part in the step.
    std::optional<agents::ResponseBatch> mb;
    if (!prompts.empty()) {
      mb = agents::make_response_batch(prompts, responses, learner.pad_id, learner.device);
      padded_positions += static_cast<double>(mb->width) * static_cast<double>(prompts.size());
      for (size_t b = 0; b < prompts.size(); ++b) positions += static_cast<double>(prompts[b].size() + responses[b].size());
    }
    if (train_actor && minibatch.response_tokens > 0) {
      torch::Tensor loss;
      if (mb && mb->response_width > 0) {
        const int64_t r = mb->response_width;
        torch::Tensor entropy;
        const torch::Tensor tokens = count_tensor(minibatch.response_tokens, learner.device);
        const torch::Tensor log_distributions = agents::response_log_distributions(learner.actor, *mb, learner.allowed_tokens);
        const torch::Tensor logp = agents::response_token_logprobs(log_distributions, *mb, &entropy);
        const PolicyLoss pl = policy_loss(logp, right_aligned(old_lp, r).to(learner.device), right_aligned(adv, r).to(learner.device),
                                          mb->response_mask, {ppo.clip, ppo.dual_clip}, tokens);
        const torch::Tensor entropy_mean = masked_mean(entropy, mb->response_mask, tokens);
        loss = pl.loss - ppo.entropy_coef * entropy_mean;
        if (ppo.anchor_kl_coef > 0) {
          torch::Tensor reference_log_distributions;
          if (!targets.reference_log_distributions.empty()) {
            reference_log_distributions = kept_reference(targets.reference_log_distributions, minibatch.rows, r);
          } else {
            torch::NoGradGuard no_grad;
            reference_log_distributions = agents::response_log_distributions(learner.reference, *mb, learner.allowed_tokens);
          }
          const torch::Tensor anchor = anchor_kl(log_distributions, reference_log_distributions, mb->response_mask, tokens);
          loss = loss + ppo.anchor_kl_coef * anchor;
          anchor_sum += anchor.detach().cpu();
        }
        policy_loss_sum += pl.loss.detach().cpu();
        entropy_sum += entropy_mean.detach().cpu();
        clip_sum += pl.clip_fraction.cpu();
        kl_sum += pl.approx_kl.cpu();
      }
      grad_norm_sum += clipped_step(*learner.actor_optimizer, learner.actor->parameters(), loss, ppo.grad_clip, learner.ranks.get());
    }
    if (learner.uses_critic()) {
      value_loss_sum += critic_step(learner, mb ? &*mb : nullptr, responses, old_v, ret, minibatch.value_positions);
    }
  }
  // The ranks' shares of each loss add up to the combined batch's.
  RankTotals totals;
  totals.add("policy_loss", policy_loss_sum.item<double>());
  totals.add("value_loss", value_loss_sum.item<double>());
  totals.add("entropy", entropy_sum.item<double>());
  totals.add("clip_fraction", clip_sum.item<double>());
  totals.add("ppo_kl", kl_sum.item<double>());
  totals.add("positions", positions);
  totals.add("padded_positions", padded_positions);
  totals.add("anchor_kl", anchor_sum.item<double>());
  totals.sum_over(learner.ranks.get());
  const double denom = std::max<size_t>(1, plan.size());
  nlohmann::json m;
  if (learner.uses_critic()) m["value_loss"] = totals["value_loss"] / denom;
  // The share of the update's forward positions that are padding: compute spent on no token.
  m["update_padding"] = totals["padded_positions"] > 0 ? 1.0 - totals.ratio("positions", "padded_positions") : 0.0;
  if (train_actor) {
    for (const char* name : {"policy_loss", "entropy", "clip_fraction", "ppo_kl"}) m[name] = totals[name] / denom;
    m["grad_norm"] = grad_norm_sum / denom;
    if (ppo.anchor_kl_coef > 0) m["anchor_kl"] = totals["anchor_kl"] / denom;
  }
  return m;
}

}  // namespace turnrl::trainer
