#pragma once
// Creature, arrow and plant behaviour (crafter/objects.py Cow, Zombie, Skeleton, Arrow, Plant).
#include "envs/crafter/player.h"
#include "envs/crafter/world.h"

namespace turnrl::envs::crafter {

/** One update of the non-player object in `slot` (it may already be removed: the original
 *  still runs the update, draws included). */
void update_object(World& world, Player& player, int slot);

}  // namespace turnrl::envs::crafter
