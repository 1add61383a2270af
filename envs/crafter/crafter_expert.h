#pragma once
// A scripted Crafter player that reads the world directly: the demonstrations of a format stage
// (`format.policy: expert`). It grows the golden recorder's scripted policy (wood, table, pickaxe,
// stone) into the achievement tree a careful player follows: it fights a zombie next to it, sleeps
// when tired, drinks and eats before it starves, then works down the list of achievements it has
// not unlocked yet, skipping any whose material it cannot reach, and wanders when none is left.
#include <cstdint>

#include "envs/crafter/crafter_env.h"

namespace turnrl::envs::crafter {

/** The expert's action in the env's current state; `seed` drives its random moves (wandering,
 *  stepping aside to find room to place something). Requires reset(). */
int expert_action(const CrafterEnv& env, uint64_t seed);

}  // namespace turnrl::envs::crafter
