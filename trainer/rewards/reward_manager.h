#pragma once
// The reward-manager interface (rewards.md section 1): turns of a fixed-turn collection in, token
// rewards out. Torch-free plain data, so the rollout and the learner can both feed it.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace turnrl::trainer::rewards {

/** One turn of a collection, in the order the collection holds them (an episode's turns in time order). */
struct CollectedTurn {
  uint64_t episode_id = 0;     // unique over the run: a new episode never reuses an id
  double env_reward = 0.0;     // the env's reward for this turn's action
  size_t response_tokens = 0;  // L: the turn's token rewards have L entries
  bool episode_ended = false;  // terminated or truncated after this turn
  /** Per-token scores an earlier stage attached (an external scorer's rm_scores): used as they are. */
  std::optional<std::vector<float>> scores;
};

/** One row of L token rewards per collected turn. */
using TurnTokenRewards = std::vector<std::vector<float>>;

/**
 * Assigns token rewards to the turns of successive collections. A manager may carry state from
 * one collection to the next (episodes the fixed-turn window cut); state() / load_state() move
 * that state through a checkpoint. Not thread-safe.
 */
class RewardManager {
 public:
  virtual ~RewardManager() = default;
  /** Throws std::invalid_argument for a turn with scores of the wrong length, or one with no token to reward. */
  virtual TurnTokenRewards assign(const std::vector<CollectedTurn>& turns) = 0;
  virtual nlohmann::json state() const = 0;
  virtual void load_state(const nlohmann::json& state) = 0;
};

/** "env" (EnvRewardManager) or "episode" (EpisodeRewardManager); std::invalid_argument otherwise.
 *  `normalize_by_length` applies to "episode" only. */
std::unique_ptr<RewardManager> make_reward_manager(const std::string& name, bool normalize_by_length);

/** The bypass both managers share: scores of the right length, copied; std::nullopt when the turn has none. */
std::optional<std::vector<float>> attached_scores(const CollectedTurn& turn);

}  // namespace turnrl::trainer::rewards
