#pragma once
// BALROG's Crafter text layer (balrog/environments/crafter): action names and descriptions,
// the instruction prompt, and the long-term (status, listing, facing) / short-term
// (status and inventory) observation texts.
#include <string>
#include <vector>

#include "envs/crafter/player.h"
#include "envs/crafter/world.h"
#include "envs/env.h"

namespace turnrl::envs::crafter {

/** BALROG's 17 action names ("Noop", "Move West", ...) with the prompt descriptions. */
const std::vector<ActionSpec>& balrog_actions();
std::string balrog_instruction_prompt();
/** describe_frame's first part; `view` is crafter's (width, height) view in grid units. */
std::string describe_long_term(const World& world, const Player& player, Pos view);
/** describe_inventory: vitals, then the non-zero items. */
std::string describe_short_term(const Player& player);

}  // namespace turnrl::envs::crafter
