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
/** The cells describe_long_term reads: [x0, x1) x [y0, y1), numpy's slices of the semantic map
 *  around `player` (empty along a map edge the slice start passes, as in the original). */
struct DescribedWindow {
  int x0 = 0, x1 = 0, y0 = 0, y1 = 0;
  bool contains(Pos p) const { return p.x >= x0 && p.x < x1 && p.y >= y0 && p.y < y1; }
};
DescribedWindow described_window(const World& world, Pos player, Pos view);
/** describe_frame's first part; `view` is crafter's (width, height) view in grid units. */
std::string describe_long_term(const World& world, const Player& player, Pos view);
/** describe_inventory: vitals, then the non-zero items. */
std::string describe_short_term(const Player& player);

}  // namespace turnrl::envs::crafter
