#include "trainer/algo/targets.h"

#include <optional>

#include "agents/model/generation.h"
#include "trainer/dist/distributed.h"
#include "trainer/rewards/gigpo.h"

namespace turnrl::trainer {
namespace {

constexpr int64_t kScoringChunk = 256;

/** Copies the right-aligned last `n` entries of row `b` of a [B, W] tensor. */
std::vector<float> row_tail(const torch::Tensor& rows, int64_t b, size_t n) {
  const auto a = rows.accessor<float, 2>();
  const int64_t width = rows.size(1);
  std::vector<float> out(n);
  for (size_t j = 0; j < n; ++j) out[j] = a[b][width - static_cast<int64_t>(n) + static_cast<int64_t>(j)];
  return out;
}

/** Old, reference log-probs and critic values of every turn, scored in chunks. */
void score_turns(LearnerState& learner, const RolloutBatch& batch, TrainingTargets& t, std::vector<std::vector<float>>& ref_logprobs) {
  const size_t n = batch.turns.size();
  t.old_logprobs.resize(n);
  t.old_values.resize(n);
  ref_logprobs.resize(n);
  size_t response_tokens = 0;
  for (const TurnRecord& turn : batch.turns) response_tokens += turn.response_ids.size();
  const size_t reference_bytes = response_tokens * static_cast<size_t>(learner.reference->config().vocab_size) * sizeof(float);
  const bool keep_reference = learner.config.ppo.anchor_kl_coef > 0 && reference_bytes <= kMaxKeptReferenceBytes;
  if (keep_reference) t.reference_log_distributions.resize(n);
  for (size_t start = 0; start < n; start += kScoringChunk) {
    const size_t end = std::min(n, start + static_cast<size_t>(kScoringChunk));
    std::vector<std::vector<int32_t>> prompts, responses;
    for (size_t i = start; i < end; ++i) {
      prompts.push_back(batch.turns[i].prompt_ids);
      responses.push_back(batch.turns[i].response_ids);
    }
    const agents::ResponseBatch chunk = agents::make_response_batch(prompts, responses, learner.pad_id, learner.device);
    const torch::Tensor old_lp = agents::response_logprobs(learner.actor, chunk, learner.allowed_tokens).to(torch::kCPU);
    const torch::Tensor ref_distributions = agents::response_log_distributions(learner.reference, chunk, learner.allowed_tokens);
    const torch::Tensor ref_lp = agents::response_token_logprobs(ref_distributions, chunk).to(torch::kCPU);
    const torch::Tensor values = learner.uses_critic() ? agents::response_values(learner.critic, chunk).to(torch::kCPU) : torch::Tensor();
    for (size_t i = start; i < end; ++i) {
      const int64_t b = static_cast<int64_t>(i - start);
      const size_t length = batch.turns[i].response_ids.size();
      t.old_logprobs[i] = row_tail(old_lp, b, length);
      ref_logprobs[i] = row_tail(ref_lp, b, length);
      if (keep_reference) {
        const int64_t tail = static_cast<int64_t>(length);
        t.reference_log_distributions[i] = ref_distributions[b].narrow(0, chunk.response_width - tail, tail).clone();
      }
      if (learner.uses_critic()) t.old_values[i] = row_tail(values, b, length + 1);
    }
  }
}

/** KL-in-reward: -kl_coef * (logp_old - logp_ref) on every response token; the mean KL of the
 *  reasoning and of the action tokens goes to the metrics. */
std::vector<std::vector<float>> kl_penalties(const LearnerState& learner, const RolloutBatch& batch, TrainingTargets& t,
                                             const std::vector<std::vector<float>>& ref_logprobs) {
  std::vector<std::vector<float>> penalties(batch.turns.size());
  double kl_reason = 0, kl_act = 0;
  int64_t n_reason = 0, n_act = 0;
  for (size_t i = 0; i < batch.turns.size(); ++i) {
    const TurnRecord& turn = batch.turns[i];
    for (size_t k = 0; k < turn.response_ids.size(); ++k) {
      const double kl = t.old_logprobs[i][k] - ref_logprobs[i][k];
      penalties[i].push_back(static_cast<float>(-learner.config.ppo.kl_coef * kl));
      const bool action_token = static_cast<int>(k) >= turn.action_token_start;
      (action_token ? kl_act : kl_reason) += kl;
      ++(action_token ? n_act : n_reason);
    }
  }
  t.kl_reasoning = n_reason ? kl_reason / n_reason : 0.0;
  t.kl_action = n_act ? kl_act / n_act : 0.0;
  t.reasoning_tokens = n_reason;
  t.action_tokens = n_act;
  return penalties;
}

/** V(s_T+1) of each slot whose episode the cut left unfinished. */
std::vector<std::optional<float>> bootstrap_values(LearnerState& learner, const RolloutBatch& batch) {
  std::vector<std::optional<float>> bootstrap(batch.n_env);
  std::vector<std::vector<int32_t>> prompts;
  std::vector<int> slots;
  for (int s = 0; s < batch.n_env; ++s) {
    if (!batch.bootstrap[s]) continue;
    prompts.push_back(batch.bootstrap[s]->prompt_ids);
    slots.push_back(s);
  }
  if (prompts.empty()) return bootstrap;
  const std::vector<std::vector<int32_t>> no_responses(prompts.size());
  const torch::Tensor values =
      agents::response_values(learner.critic, agents::make_response_batch(prompts, no_responses, learner.pad_id, learner.device))
          .to(torch::kCPU);
  for (size_t j = 0; j < slots.size(); ++j) bootstrap[slots[j]] = values[static_cast<int64_t>(j)][0].item<float>();
  return bootstrap;
}

/** Dual-discount GAE per slot with the critic's values and V(s_T+1) bootstraps; advantages whitened.
 *  Token rewards: the KL penalties plus the reward stage's streams. */
void gae_targets(LearnerState& learner, const RolloutBatch& batch, const std::vector<std::vector<float>>& penalties,
                 const StageRewards& rewards, TrainingTargets& t) {
  const std::vector<std::optional<float>> bootstrap = bootstrap_values(learner, batch);
  const TrainConfig::Ppo& ppo = learner.config.ppo;
  const GaeParams gae{ppo.step_gamma, ppo.step_lambda, ppo.token_gamma, ppo.token_lambda};
  double value_sum = 0;
  for (int s = 0; s < batch.n_env; ++s) {
    std::vector<TurnSignals> signals;
    for (int t_index = 0; t_index < batch.e_len; ++t_index) {
      const size_t i = static_cast<size_t>(t_index) * batch.n_env + s;
      TurnSignals sig;
      sig.values = t.old_values[i];
      sig.rewards = penalties[i];
      for (size_t k = 0; k < sig.rewards.size(); ++k) {
        sig.rewards[k] += rewards.manager[i][k] + (rewards.process.empty() ? 0.0f : rewards.process[i][k]);
      }
      sig.rewards.push_back(0.0f);  // the state after the last token
      sig.done = batch.turns[i].done();
      value_sum += sig.values.front();
      signals.push_back(std::move(sig));
    }
    const auto targets = dual_discount_gae(signals, bootstrap[s], gae);
    for (int t_index = 0; t_index < batch.e_len; ++t_index) {
      const size_t i = static_cast<size_t>(t_index) * batch.n_env + s;
      t.advantages[i].assign(targets[t_index].advantages.begin(),
                             targets[t_index].advantages.begin() + static_cast<long>(penalties[i].size()));
      t.returns[i] = targets[t_index].returns;
    }
  }
  std::vector<float*> entries;
  for (auto& row : t.advantages) {
    for (float& x : row) entries.push_back(&x);
  }
  whiten(entries, learner.ranks.get());
  t.mean_value = value_sum / std::max<size_t>(1, batch.turns.size());
}

/** Concatenates the rows' token values into one sample per segment. */
TokenRewards per_segment(const std::vector<Segment>& segments, const std::vector<std::vector<float>>& rows) {
  TokenRewards out;
  for (const Segment& segment : segments) {
    out.emplace_back();
    for (size_t i : segment.rows) out.back().insert(out.back().end(), rows[i].begin(), rows[i].end());
  }
  return out;
}

/** Writes per-segment token advantages back to their turns. */
void scatter(const std::vector<Segment>& segments, const TokenRewards& advantages, const std::vector<std::vector<float>>& penalties,
             TrainingTargets& t) {
  for (size_t j = 0; j < segments.size(); ++j) {
    auto from = advantages[j].begin();
    for (size_t i : segments[j].rows) {
      t.advantages[i].assign(from, from + static_cast<long>(penalties[i].size()));
      from += static_cast<long>(penalties[i].size());
    }
  }
}

/** A critic-free estimator over the collection's episode segments. A turn's last manager reward is
 *  the outcome when the episode ends there; every other manager reward and the process stream's
 *  rewards are process rewards. */
void sample_targets(const LearnerState& learner, const RolloutBatch& batch, const std::vector<std::vector<float>>& penalties,
                    const StageRewards& rewards, TrainingTargets& t) {
  const std::vector<Segment> segments = episode_segments(learner.config, batch);
  std::vector<std::vector<float>> outcome(batch.turns.size()), process(batch.turns.size());
  for (size_t i = 0; i < batch.turns.size(); ++i) {
    process[i] = rewards.manager[i];
    outcome[i].assign(process[i].size(), 0.0f);
    if (batch.turns[i].done() && !process[i].empty()) std::swap(outcome[i].back(), process[i].back());
    if (!rewards.process.empty()) {
      for (size_t k = 0; k < process[i].size(); ++k) process[i][k] += rewards.process[i][k];
    }
  }
  SampleRewards samples{per_segment(segments, outcome), per_segment(segments, process), per_segment(segments, penalties)};
  std::vector<uint64_t> keys;
  for (const Segment& segment : segments) keys.push_back(segment.group_key);
  scatter(segments, sample_advantages(learner.estimator, samples, keys, learner.config.ppo.step_gamma, learner.ranks.get()), penalties, t);
}

/** GiGPO over the episode segments: each turn's reward is its token rewards' sum, its anchor state
 *  the state hash the rollout recorded; the combined advantage covers every token of the turn, the
 *  KL terms are added as their discounted sum to go (as for the other critic-free estimators). */
void gigpo_targets(const LearnerState& learner, const RolloutBatch& batch, const std::vector<std::vector<float>>& penalties,
                   const rewards::TurnTokenRewards& token_rewards, TrainingTargets& t) {
  const TrainConfig::Ppo& ppo = learner.config.ppo;
  const std::vector<Segment> segments = episode_segments(learner.config, batch);
  std::vector<rewards::GigpoEpisode> episodes;
  for (const Segment& segment : segments) {
    rewards::GigpoEpisode episode;
    episode.group_key = segment.group_key;
    for (size_t i : segment.rows) {
      double reward = 0.0;
      for (float r : token_rewards[i]) reward += r;
      episode.rewards.push_back(reward);
      episode.states.push_back(batch.turns[i].state_hash);
    }
    episodes.push_back(std::move(episode));
  }
  rewards::GigpoParams params;
  params.gamma = ppo.gigpo_gamma;
  params.step_weight = ppo.gigpo_step_weight;
  params.normalisation = ppo.gigpo_mean_norm ? rewards::GigpoNormalisation::kMean : rewards::GigpoNormalisation::kMeanStd;
  const auto advantages = rewards::gigpo_advantages(episodes, params);
  TokenRewards per_token(segments.size());
  for (size_t j = 0; j < segments.size(); ++j) {
    for (size_t step = 0; step < segments[j].rows.size(); ++step) {
      const size_t length = penalties[segments[j].rows[step]].size();
      per_token[j].insert(per_token[j].end(), length, static_cast<float>(advantages[j][step].combined));
    }
  }
  add_penalty_to_go(per_token, per_segment(segments, penalties), ppo.step_gamma);
  scatter(segments, per_token, penalties, t);
}

}  // namespace

std::vector<Segment> episode_segments(const TrainConfig& config, const RolloutBatch& batch) {
  std::vector<Segment> segments;
  for (int s = 0; s < batch.n_env; ++s) {
    for (int t_index = 0; t_index < batch.e_len; ++t_index) {
      const size_t i = static_cast<size_t>(t_index) * batch.n_env + s;
      const TurnRecord& turn = batch.turns[i];
      if (t_index == 0 || batch.turns[i - batch.n_env].episode_id != turn.episode_id) {
        const size_t task = static_cast<size_t>(turn.slot / config.env.group_size) % config.env.ids.size();
        segments.push_back({turn.episode_seed * config.env.ids.size() + task, {}});
      }
      segments.back().rows.push_back(i);
    }
  }
  return segments;
}

TrainingTargets compute_targets(LearnerState& learner, const RolloutBatch& batch, const StageRewards& rewards) {
  if (rewards.manager.size() != batch.turns.size() || (!rewards.process.empty() && rewards.process.size() != batch.turns.size())) {
    throw std::invalid_argument("compute_targets: one row of token rewards per turn in each stream");
  }
  if (learner.estimator == Estimator::kGigpo && !rewards.process.empty()) {
    throw std::invalid_argument("compute_targets: GiGPO sums each turn's rewards and cannot keep a process stream");
  }
  torch::NoGradGuard no_grad;
  TrainingTargets t;
  std::vector<std::vector<float>> ref_logprobs;
  score_turns(learner, batch, t, ref_logprobs);
  const std::vector<std::vector<float>> penalties = kl_penalties(learner, batch, t, ref_logprobs);
  t.advantages.resize(batch.turns.size());
  t.returns.resize(batch.turns.size());
  if (learner.uses_critic()) {
    gae_targets(learner, batch, penalties, rewards, t);
  } else if (learner.estimator == Estimator::kGigpo) {
    gigpo_targets(learner, batch, penalties, rewards.manager, t);
  } else {
    sample_targets(learner, batch, penalties, rewards, t);
  }
  return t;
}

}  // namespace turnrl::trainer
