#pragma once
// The player (crafter/objects.py Player): inventory, achievements, life stats and actions.
#include <array>

#include "envs/crafter/world.h"

namespace turnrl::envs::crafter {

struct Player {
  Pos facing{0, 1};
  bool sleeping = false;
  std::array<int, kNumItems> inventory{};
  std::array<int, kNumAchievements> achievements{};
  double hunger = 0, thirst = 0, fatigue = 0, recover = 0;
  int last_health = 0;
  int action = action::kNoop;

  /** Start of an episode: full vitals, nothing else. */
  void reset();
  int health() const { return inventory[item::kHealth]; }
  /** The health setter clamps at 0 from below only, as the original's property does. */
  void set_health(int value) { inventory[item::kHealth] = std::max(0, value); }
};

/** Player.update: runs `player.action` in the world (slot World::kPlayerSlot). */
void update_player(World& world, Player& player);

}  // namespace turnrl::envs::crafter
