#pragma once
// The "env" reward manager: each turn's env reward on the turn's last response token (the
// project's behaviour before the episode manager), with the same rm_scores bypass.
#include "trainer/rewards/reward_manager.h"

namespace turnrl::trainer::rewards {

class EnvRewardManager final : public RewardManager {
 public:
  TurnTokenRewards assign(const std::vector<CollectedTurn>& turns) override;
  /** Stateless: an empty object. */
  nlohmann::json state() const override;
  void load_state(const nlohmann::json& state) override;
};

}  // namespace turnrl::trainer::rewards
