#include "trainer/rewards/reward_stage.h"

#include <chrono>

namespace turnrl::trainer {

std::function<void(size_t, const TurnRecord&)> RewardStreams::observer() {
  if (!streaming) return {};
  return observe_all({scorer.get(), process.get()});
}

StageRewards assign_token_rewards(rewards::RewardManager& manager, const RolloutBatch& batch, RewardStreams* streams) {
  StageRewards out;
  std::vector<std::vector<float>> rm_scores;
  const auto start = std::chrono::steady_clock::now();
  if (streams && streams->scorer) {
    rm_scores = streams->scorer->finish(batch);
    out.scorer_seconds = streams->scorer->scoring_seconds();
  }
  if (streams && streams->process) {
    out.process = streams->process->finish(batch);
    out.process_seconds = streams->process->scoring_seconds();
  }
  out.wait_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  // Time-major rows hold every episode's turns in time order, as the managers expect.
  std::vector<rewards::CollectedTurn> turns;
  turns.reserve(batch.turns.size());
  for (size_t i = 0; i < batch.turns.size(); ++i) {
    const TurnRecord& record = batch.turns[i];
    rewards::CollectedTurn turn;
    turn.episode_id = record.episode_id;
    turn.env_reward = record.reward;
    turn.response_tokens = record.response_ids.size();
    turn.episode_ended = record.done();
    if (!rm_scores.empty()) turn.scores = std::move(rm_scores[i]);
    turns.push_back(std::move(turn));
  }
  out.manager = manager.assign(turns);
  return out;
}

}  // namespace turnrl::trainer
