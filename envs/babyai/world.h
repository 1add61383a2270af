#pragma once
// The Minigrid state and its dynamics: the six actions, the egocentric 7x7 view with occlusion,
// and the fork's text descriptions of that view.
#include <array>
#include <string>
#include <vector>

#include "envs/babyai/grid.h"

namespace turnrl::envs::babyai {

enum Action : int { kTurnLeft = 0, kTurnRight = 1, kForward = 2, kPickup = 3, kDrop = 4, kToggle = 5 };

inline constexpr int kViewSize = 7;
/** The agent's cell in its own view. */
inline constexpr Pos kViewAgent = {kViewSize / 2, kViewSize - 1};

/** The 7x7 view, indexed [x][y] in view coordinates (agent at kViewAgent, looking up). */
using ViewImage = std::array<std::array<CellCode, kViewSize>, kViewSize>;

/** The cell one step from `pos` in direction `dir`. */
inline Pos ahead(Pos pos, int dir) { return {pos.x + kDirVec[dir].x, pos.y + kDirVec[dir].y}; }

struct World {
  Grid grid;
  std::vector<WorldObject> objects;
  Pos agent_pos;
  int agent_dir = 0;
  int16_t carrying = Grid::kEmpty;  // object index or kEmpty
  int step_count = 0;
  int max_steps = 0;

  Pos front_pos() const { return ahead(agent_pos, agent_dir); }
  /** Whether kForward may enter `p`: an empty cell or an open door. */
  bool can_enter(Pos p) const {
    const int16_t cell = grid.at(p);
    return cell == Grid::kEmpty || (cell >= 0 && objects[cell].can_overlap());
  }
  /** Adds an object (not yet on the grid) and returns its index. */
  int16_t add_object(ObjectType type, Color color);
  /** Applies one Minigrid action (after step_count was incremented by the caller). */
  void apply_action(int action);
  ViewImage view() const;
  /** The grid cell at view coordinates `v` (it may lie outside the grid). */
  Pos view_cell(Pos v) const;
  /** The fork's `info["descriptions"]` for the current view. */
  std::vector<std::string> descriptions() const;
  /** The object at `cell` (one holds it) in descriptions()' words, placed relative to the agent,
   *  less "You see a ": "red ball 1 step left and 2 steps forward". */
  std::string phrase_at(Pos cell) const;
};

}  // namespace turnrl::envs::babyai
