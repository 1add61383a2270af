#pragma once
// The first three steps of an iteration: collect turns, give them rewards, compute their targets.
// Dynamic sampling (reward.dynamic_sampling_tries) may collect several times to fill one batch.
#include <vector>

#include <nlohmann/json.hpp>

#include "trainer/algo/learner_state.h"
#include "trainer/algo/targets.h"
#include "trainer/rewards/reward_stage.h"
#include "trainer/rewards/signal_batch.h"
#include "trainer/rollout/rollout.h"

namespace turnrl::trainer {

class ProcessGroup;  // trainer/dist/distributed.h

/** The reward stage's figures over the collections of one iteration, for the metrics. */
struct RewardTotals {
  double wait_seconds = 0, scorer_seconds = 0, process_seconds = 0;
  double process_abs_sum = 0;  // |U| over the process rewards given (segment ends whose U is not 0)
  size_t process_count = 0;

  void add(const StageRewards& rewards);
  /** The reward stage's metrics (none without a scorer or process rewards: nothing to wait for). */
  nlohmann::json metrics(const TrainConfig& config) const;
};

/** Where the collecting time of an iteration went (seconds). */
struct CollectTimes {
  double collect = 0;   // the rollout, of which:
  double generate = 0;  //   the agent's replies
  double env = 0;       //   env steps
  double prompt = 0;    //   prompt building
  double scoring = 0;   // old/reference log-probs, values, rewards, advantages
};

/** One iteration's training data and how it was made. */
struct Collection {
  RolloutBatch batch;
  TrainingTargets targets;
  std::vector<EpisodeSummary> finished_episodes;  // of every collection made
  std::vector<EpisodeRestart> restarts;           // of every collection made
  nlohmann::json sampling = nlohmann::json::object();  // dynamic sampling's group counts (over the ranks)
  RewardTotals rewards;
  CollectTimes times;
};

class Collector {
 public:
  Collector(LearnerState& learner, Rollout& rollout, RewardStreams& streams) : learner_(learner), rollout_(rollout), streams_(streams) {}
  /** Collects, rewards and scores one batch (each rank its own share). */
  Collection collect();

 private:
  /** One rollout with its rewards and targets, its figures added to `into`. */
  ScoredCollection collect_scored(Collection& into);

  LearnerState& learner_;
  Rollout& rollout_;
  RewardStreams& streams_;
};

}  // namespace turnrl::trainer
