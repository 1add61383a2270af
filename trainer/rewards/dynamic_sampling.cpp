#include "trainer/rewards/dynamic_sampling.h"

#include <algorithm>

namespace turnrl::trainer::rewards {

bool has_signal(const std::vector<double>& episode_rewards) {
  return std::any_of(episode_rewards.begin(), episode_rewards.end(),
                     [&](double reward) { return reward != episode_rewards.front(); });
}

}  // namespace turnrl::trainer::rewards
