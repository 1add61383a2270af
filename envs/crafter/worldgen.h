#pragma once
// World generation (crafter/worldgen.py): terrain from OpenSimplex noise, tunnels, and the
// initial cows, zombies and skeletons, drawing from the world's random stream in scan order.
#include "envs/crafter/world.h"

namespace turnrl::envs::crafter {

/** Fills an empty world around the player at `player`. */
void generate_world(World& world, Pos player);

}  // namespace turnrl::envs::crafter
