#include "trainer/rewards/env_reward_manager.h"

#include <stdexcept>

#include <nlohmann/json.hpp>

namespace turnrl::trainer::rewards {

TurnTokenRewards EnvRewardManager::assign(const std::vector<CollectedTurn>& turns) {
  TurnTokenRewards out;
  out.reserve(turns.size());
  for (const CollectedTurn& turn : turns) {
    if (auto scores = attached_scores(turn)) {
      out.push_back(std::move(*scores));
      continue;
    }
    if (turn.response_tokens == 0) {
      throw std::invalid_argument("episode " + std::to_string(turn.episode_id) + ": a turn with no response token");
    }
    out.emplace_back(turn.response_tokens, 0.0f);
    out.back().back() = static_cast<float>(turn.env_reward);
  }
  return out;
}

nlohmann::json EnvRewardManager::state() const { return nlohmann::json::object(); }

void EnvRewardManager::load_state(const nlohmann::json& state) {
  if (!state.is_object() || !state.empty()) throw std::invalid_argument("env reward manager: state must be an empty object");
}

}  // namespace turnrl::trainer::rewards
