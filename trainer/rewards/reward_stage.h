#pragma once
// The reward stage between a collection and the estimator: the configured reward manager
// (trainer/rewards/) turns the collection's turn rewards into token rewards, once per collection
// (the manager carries cut episodes across collections, so it must never see one twice). Scoring
// streams (trainer/rewards/reward_stream.h) add what is scored apart: an external scorer's rm_scores, which
// the manager uses as they are, and process rewards, kept in their own stream so that the estimator
// can normalise them apart from the outcome.
#include <functional>
#include <memory>

#include "trainer/rewards/reward_stream.h"
#include "trainer/rewards/reward_manager.h"
#include "trainer/rollout/rollout_buffer.h"

namespace turnrl::trainer {

/** The reward stage's rows for one collection: one per turn in each stream (its response length). */
struct StageRewards {
  rewards::TurnTokenRewards manager;  // the manager's: env rewards, episode sums, or attached rm_scores
  rewards::TurnTokenRewards process;  // process rewards (U_i on segment ends); empty when off
  double wait_seconds = 0.0;          // waiting for the streams after the collection
  double scorer_seconds = 0.0, process_seconds = 0.0;  // inside the scorers (summed over their workers)
};

/** The scoring streams of a run (each optional) and when they score. */
struct RewardStreams {
  std::unique_ptr<ScoringStream> scorer;   // an external scorer: rm_scores
  std::unique_ptr<ScoringStream> process;  // process rewards
  bool streaming = true;                   // samples scored as they finish; false: after the collection
  /** The rollout's RolloutConfig::on_turn_finished (empty when not streaming or without streams). */
  std::function<void(size_t, const TurnRecord&)> observer();
};

/** Token rewards of every turn of `batch`, after waiting for `streams`' scores of it (when given). */
StageRewards assign_token_rewards(rewards::RewardManager& manager, const RolloutBatch& batch, RewardStreams* streams = nullptr);

}  // namespace turnrl::trainer
