#pragma once
// A scripted Crafter player that reads the world directly: the demonstrations of a format stage
// (`format.policy: expert`). It grows the golden recorder's scripted policy (wood, table, pickaxe,
// stone) into the achievement tree a careful player follows: it fights a zombie next to it, sleeps
// when tired, drinks and eats before it starves, then works down the list of achievements it has
// not unlocked yet, skipping any whose material it cannot reach, and wanders when none is left.
// With view-bound sight it reaches only for what the prompt's window shows and searches (straight
// on, turning where blocked and now and then at random) when nothing it needs is in view.
#include <cstdint>

#include "envs/crafter/crafter_env.h"
#include "envs/expert.h"

namespace turnrl::envs::crafter {

/** The expert's action in the env's current state and its aim, what the action is for in the
 *  prompt's words ("collect tree", "hit zombie", "make wood pickaxe", "go to table", "go" when it
 *  wanders or searches); `seed` drives its random moves (wandering, searching, stepping aside to
 *  find room to place something). Requires reset(). */
ExpertMove expert_move(const CrafterEnv& env, uint64_t seed, ExpertSight sight);
/** The same on a world and its player, `view` the env's local view (CrafterConfig::view). */
ExpertMove expert_move(const World& world, const Player& player, Pos view, uint64_t seed, ExpertSight sight);

}  // namespace turnrl::envs::crafter
