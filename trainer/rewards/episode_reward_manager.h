#pragma once
// verl-agent's EpisodeRewardManager (rewards.md section 1) over fixed-turn collections: every turn
// adds its env reward to its episode's sum, and the episode's final turn gets that sum (divided by
// the episode's turn count with normalize_by_length) on its last response token; every other token
// gets 0. An episode the collection window cuts keeps its partial sum and turn count until a later
// collection brings its final turn (state() carries them through checkpoints).
//
// Bypass: a turn with scores attached by an earlier stage (an external scorer's rm_scores) gets
// exactly those scores. Its env reward still enters the episode's sum, but when the episode's final
// turn carries scores they stand for the episode and the sum is not written anywhere.
#include <cstdint>
#include <map>

#include "trainer/rewards/reward_manager.h"

namespace turnrl::trainer::rewards {

class EpisodeRewardManager final : public RewardManager {
 public:
  explicit EpisodeRewardManager(bool normalize_by_length) : normalize_by_length_(normalize_by_length) {}

  /** Throws std::logic_error for a turn after its episode's final turn in the same collection (episode
   *  ids are unique over the run, so an id seen after its end in a later collection is a new episode). */
  TurnTokenRewards assign(const std::vector<CollectedTurn>& turns) override;
  /** {"open_episodes": [{"episode_id", "reward_sum", "turns"}, ...]}: the episodes still running. */
  nlohmann::json state() const override;
  void load_state(const nlohmann::json& state) override;

  size_t open_episodes() const { return open_.size(); }

 private:
  struct OpenEpisode {
    double reward_sum = 0.0;
    int turns = 0;
  };

  bool normalize_by_length_;
  std::map<uint64_t, OpenEpisode> open_;
};

}  // namespace turnrl::trainer::rewards
