#pragma once
// Rewards and training targets of one collection: old and reference log-probs, KL-in-reward
// (split into reasoning and action tokens at the positions the rollout recorded), then advantages
// and returns from dual-discount GAE with the critic, or from a critic-free estimator.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "trainer/algo/learner_state.h"
#include "trainer/rewards/reward_stage.h"
#include "trainer/rollout/rollout_buffer.h"

namespace turnrl::trainer {

/** Per-turn targets, aligned with RolloutBatch::turns. */
struct TrainingTargets {
  std::vector<std::vector<float>> old_logprobs;  // L
  std::vector<std::vector<float>> old_values;    // L + 1 (empty without a critic)
  std::vector<std::vector<float>> advantages;    // L
  std::vector<std::vector<float>> returns;       // L + 1 (empty without a critic)
  double kl_reasoning = 0.0, kl_action = 0.0;    // mean k1 KL of reasoning / action tokens
  int64_t reasoning_tokens = 0, action_tokens = 0;  // the tokens of those means
  double mean_value = 0.0;
  /** The reference's log-distributions [L, V] at each turn's response positions, for the anchor
   *  term (ppo.anchor_kl_coef): kept from scoring, so the update's epochs need no forward of the
   *  reference, when all of them fit in kMaxKeptReferenceBytes; otherwise empty, and the update
   *  recomputes them per mini-batch. */
  std::vector<torch::Tensor> reference_log_distributions;
};
/** 256 MiB: the tiny presets' 482-token vocabulary keeps a rank's whole collection (about 20 MB for
 *  640 turns of 16 tokens); Qwen's 151,936 keeps only a few hundred response tokens. */
constexpr size_t kMaxKeptReferenceBytes = size_t{256} << 20;

/** A slot's consecutive turns of one episode in a collection: the samples of the critic-free
 *  estimators, grouped by start state (the task of the turns' run slot and the episode seed). */
struct Segment {
  uint64_t group_key = 0;
  std::vector<size_t> rows;  // in time order
};
std::vector<Segment> episode_segments(const TrainConfig& config, const RolloutBatch& batch);

/** `rewards`: the reward stage's rows for `batch` (trainer/rewards/reward_stage.h). GAE sums the streams; the
 *  critic-free estimators normalise the outcome (a done turn's last manager reward) apart from the
 *  process rewards (every other manager reward and the process stream); GiGPO refuses a process stream.
 *  In a data-parallel run (learner.ranks) each rank passes its own collection; whitening then covers
 *  every rank's (a collective for the estimators that whiten, gae and reinforce++; none for the group ones). */
TrainingTargets compute_targets(LearnerState& learner, const RolloutBatch& batch, const StageRewards& rewards);

}  // namespace turnrl::trainer
