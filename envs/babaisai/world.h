#pragma once
// A BabaIsAI level in play: the stacked grid, its objects, the active rules, and the original's
// step (every "you" thing moves, pushing chains of pushable objects; rules are then re-read).
#include <vector>

#include "envs/babaisai/grid.h"
#include "envs/babaisai/objects.h"
#include "envs/babaisai/rules.h"
#include "envs/common/state_writer.h"

namespace turnrl::envs::babaisai {

/** Actions in the original's order; BALROG's action names are the same words. */
enum Action : int { kIdle = 0, kUp = 1, kRight = 2, kDown = 3, kLeft = 4 };
constexpr int kNumActions = 5;

struct MoveOutcome {
  Pos new_pos;
  bool win = false;   // the top object at the destination (before moving) "is win"
  bool lose = false;  // ... "is lose"
};

struct StepOutcome {
  double reward = 0.0;
  bool done = false;
};

struct World {
  Grid grid;
  std::vector<Object> objects;  // pool; ids stay valid for the episode
  Ruleset rules;
  Pos agent_pos;
  int agent_dir = 0;
  int step_count = 0;
  int max_steps = 100;

  /** An empty grid of the given size with no objects. */
  void clear(int width, int height);
  /** Creates `object` on top of the stack at `p`. */
  ObjectId add(Pos p, const Object& object);
  /** The original's border: a wall rectangle (its corners get two walls). */
  void add_border();

  bool is(ObjectId id, Property property) const {
    const Object& o = objects[id];
    return o.kind == Kind::kThing && rules.holds(o.thing, property);
  }
  /** Rule blocks are always pushable; things when "T is push"; border walls never. */
  bool is_push(ObjectId id) const;
  /** Only things that are not "stop" can be stood on or stacked on. */
  bool can_overlap(ObjectId id) const { return objects[id].kind == Kind::kThing && !is(id, Property::kStop); }

  /** Re-reads the rules from the grid. */
  void refresh_rules() { extract_rules(grid, objects, rules); }
  /** After generation: rules, and the agent at the first "you" thing (row-major), facing its dir. */
  void start_episode();
  /** The original's recursive move of the top object at `pos` one cell in direction `dir`. */
  MoveOutcome move(Pos pos, int dir);
  /** One step of the original env (step_count, movement, reward, rules, replacements). */
  StepOutcome step(int action);
  /** Every cell's stack by object content (pool ids left out: they only name objects). */
  void write_grid(StateWriter& out) const;

 private:
  void open_shut(Pos pos, Pos fwd);
  void apply_replacements();
};

}  // namespace turnrl::envs::babaisai
