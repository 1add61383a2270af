#pragma once
// Crafter (crafter/env.py): the step order, balancing, daylight, rewards and episode seeds,
// in a plain mode and in BALROG's mode (no-op after reset, two renders per step, 2000-step loop).
#include <array>
#include <string>
#include <vector>

#include "envs/crafter/player.h"
#include "envs/crafter/world.h"
#include "envs/env.h"

namespace turnrl::envs::crafter {

struct CrafterConfig {
  Pos area{64, 64};
  Pos view{9, 9};
  /** Image size: only decides how many random draws a night-time render spends. */
  Pos size{64, 64};
  int length = 10000;  // 0: no length limit
  /** BALROG's mode: a no-op step after every reset, two renders per step, max_steps 2000. */
  bool balrog = false;
  int balrog_max_steps = 2000;
};

class CrafterEnv final : public Env {
 public:
  CrafterEnv(std::string id, const CrafterConfig& config);

  const std::string& id() const override { return id_; }
  /** A fresh `crafter.Env(seed=seed)` reset once: episode 1 of that seed. */
  void reset(uint64_t seed) override { reset_episode(seed, 1); }
  /** The `episode`-th reset of `crafter.Env(seed=seed)`: world seed hash((seed, episode)) % (2**31 - 1). */
  void reset_episode(uint64_t seed, int episode);
  StepResult step(int action) override;
  const std::vector<ActionSpec>& actions() const override;
  int default_action() const override { return 0; }
  const ActionTextRules& text_rules() const override;
  int max_steps() const override { return config_.balrog ? config_.balrog_max_steps : config_.length; }
  std::string instruction_prompt() const override;
  TextObservation observe_text() const override;
  std::string render_ascii() const override;
  double progression() const override;
  std::vector<std::string> achievement_names() const override;
  std::vector<std::string> unlocked_achievements() const override;
  /** Area and view, every cell's material and the object on it (by position, so the slot numbers
   *  and update order are out with the random stream), the player's facing, sleep, inventory,
   *  achievement counts and vitals, the episode's unlocks, the health the next reward compares with,
   *  and whether the episode is over. Step counters, daylight, world seed and episode are out. */
  std::string serialize_state() const override;

  // Structured state for agents, tests and golden replay.
  const CrafterConfig& config() const { return config_; }
  const World& world() const { return world_; }
  const Player& player() const { return player_; }
  Pos player_pos() const { return world_.object(World::kPlayerSlot).pos; }
  /** Semantic map (ids: materials 0..12, objects 13..18), byte x * height + y. */
  std::vector<uint8_t> semantic_map() const { return world_.semantic_map(); }
  /** Names of the (2r+1)^2 cells around the player, row by row (y outer): the object if any,
   *  else the material, "oob" outside the map. */
  std::vector<std::vector<std::string>> local_view(int radius) const;
  int episode() const { return episode_; }
  int episode_step() const { return step_; }
  uint32_t world_seed() const { return world_seed_; }
  /** Achievements unlocked this episode. */
  const std::array<bool, kNumAchievements>& unlocked() const { return unlocked_; }
  /** Crafter's own `done` of the last step (death or length). */
  bool crafter_done() const { return done_; }

 private:
  void require_reset() const;
  StepResult crafter_step(int action);
  void update_daylight();
  void balance_chunk(int chunk_index);
  void render_draws();

  std::string id_;
  CrafterConfig config_;
  World world_;
  Player player_;
  std::array<bool, kNumAchievements> unlocked_{};
  uint32_t world_seed_ = 0;
  int episode_ = 0;
  int step_ = 0;
  int balrog_steps_ = 0;  // actions since BALROG's reset
  int last_health_ = kItemMax;  // Env._last_health, for the health part of the reward
  bool done_ = false;
  bool has_reset_ = false;
  uint64_t night_draws_ = 0;  // 32-bit outputs the renders of one night step consume
  int update_radius_ = 18;
};

}  // namespace turnrl::envs::crafter
