#include "trainer/reward_stage.h"

namespace turnrl::trainer {

rewards::TurnTokenRewards assign_token_rewards(rewards::RewardManager& manager, const RolloutBatch& batch) {
  // Time-major rows hold every episode's turns in time order, as the managers expect.
  std::vector<rewards::CollectedTurn> turns;
  turns.reserve(batch.turns.size());
  for (const TurnRecord& record : batch.turns) {
    rewards::CollectedTurn turn;
    turn.episode_id = record.episode_id;
    turn.env_reward = record.reward;
    turn.response_tokens = record.response_ids.size();
    turn.episode_ended = record.done();
    turns.push_back(turn);
  }
  return manager.assign(turns);
}

}  // namespace turnrl::trainer
