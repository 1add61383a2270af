#pragma once
// The reward stage between a collection and the estimator: the configured reward manager
// (trainer/rewards/) turns the collection's turn rewards into token rewards, once per collection
// (the manager carries cut episodes across collections, so it must never see one twice).
#include "trainer/rewards/reward_manager.h"
#include "trainer/rollout/rollout_buffer.h"

namespace turnrl::trainer {

/** One row of token rewards per turn of `batch` (each turn's response length). */
rewards::TurnTokenRewards assign_token_rewards(rewards::RewardManager& manager, const RolloutBatch& batch);

}  // namespace turnrl::trainer
