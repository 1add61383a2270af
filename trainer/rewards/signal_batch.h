#pragma once
// DAPO's dynamic sampling in training (rewards.md section 5; the driver is
// trainer/rewards/dynamic_sampling.h): a collection's groups of episode segments whose rewards are
// all equal carry no group-relative signal and are dropped; further collections refill the batch
// until it holds as many groups with signal as one collection has groups, or the tries run out.
#include <functional>

#include "trainer/rewards/reward_stage.h"
#include "trainer/rollout/rollout_buffer.h"
#include "trainer/algo/targets.h"

namespace turnrl::trainer {

/** One collection with its reward-stage rows and training targets. Groups are judged by their
 *  manager rewards only (the outcome, as DAPO filters on episode rewards), not process rewards. */
struct ScoredCollection {
  RolloutBatch batch;
  StageRewards rewards;
  TrainingTargets targets;
};

/** The turns the update trains on (rows of one or more collections) and the sampling counts. */
struct SignalBatch {
  RolloutBatch turns;  // only `turns` is filled: the update reads rows, not the slot/time layout
  TrainingTargets targets;
  size_t groups_wanted = 0, groups_kept = 0, groups_dropped = 0;
  int tries = 0;
  std::vector<EpisodeSummary> finished_episodes;  // of every collection made
};

/** `collect` makes and scores one collection; `max_tries` >= 1 bounds the collections. */
SignalBatch sample_batch_with_signal(const TrainConfig& config, const std::function<ScoredCollection()>& collect, int max_tries);

}  // namespace turnrl::trainer
