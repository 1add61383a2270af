#include "trainer/rewards/reward_manager.h"

#include <stdexcept>

#include "trainer/rewards/env_reward_manager.h"
#include "trainer/rewards/episode_reward_manager.h"

namespace turnrl::trainer::rewards {

std::unique_ptr<RewardManager> make_reward_manager(const std::string& name, bool normalize_by_length) {
  if (name == "env") return std::make_unique<EnvRewardManager>();
  if (name == "episode") return std::make_unique<EpisodeRewardManager>(normalize_by_length);
  throw std::invalid_argument("unknown reward manager '" + name + "' (valid: env, episode)");
}

std::optional<std::vector<float>> attached_scores(const CollectedTurn& turn) {
  if (!turn.scores) return std::nullopt;
  if (turn.scores->size() != turn.response_tokens) {
    throw std::invalid_argument("episode " + std::to_string(turn.episode_id) + ": attached scores have " +
                                std::to_string(turn.scores->size()) + " entries for " +
                                std::to_string(turn.response_tokens) + " response tokens");
  }
  return turn.scores;
}

}  // namespace turnrl::trainer::rewards
