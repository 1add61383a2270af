#include "envs/babyai/babyai_expert.h"

#include <algorithm>
#include <optional>
#include <queue>
#include <random>
#include <tuple>
#include <vector>

namespace turnrl::envs::babyai {
namespace {

constexpr Pos kNowhere = {-1, -1};

/** Face one of `fronts`, then take `action`. */
struct Goal {
  std::vector<Pos> fronts;
  int action = kForward;
};

bool contains(const std::vector<Pos>& cells, Pos p) { return std::find(cells.begin(), cells.end(), p) != cells.end(); }

/** The cells whose objects the expert may use: every cell, or with view-bound sight only those the
 *  agent sees now (the objects its observation lists), so its choices follow from the prompt. */
class Sight {
 public:
  Sight(const World& world, bool view_bound) : view_bound_(view_bound) {
    if (!view_bound) return;
    const ViewImage image = world.view();
    for (int x = 0; x < kViewSize; ++x) {
      for (int y = 0; y < kViewSize; ++y) {
        if (image[x][y].type != static_cast<uint8_t>(ObjectType::kUnseen) && Pos{x, y} != kViewAgent) seen_.push_back(world.view_cell({x, y}));
      }
    }
  }
  bool view_bound() const { return view_bound_; }
  /** `cells` less those out of sight. */
  std::vector<Pos> filter(std::vector<Pos> cells) const {
    if (view_bound_) std::erase_if(cells, [&](Pos p) { return !contains(seen_, p); });
    return cells;
  }

 private:
  bool view_bound_;
  std::vector<Pos> seen_;
};

bool holds_movable(const World& world, Pos p) {
  const int16_t cell = world.grid.at(p);
  return cell >= 0 && world.objects[cell].can_pickup();
}

/** The cells holding `objects` now, in sight: a carried object, or a box toggled away, holds none. */
std::vector<Pos> cells_of(const World& world, const std::vector<int16_t>& objects, const Sight& sight) {
  std::vector<Pos> cells;
  for (const int16_t obj : objects) {
    const Pos p = world.objects[obj].cur_pos;
    if (world.grid.contains(p) && world.grid.at(p) == obj) cells.push_back(p);
  }
  return sight.filter(std::move(cells));
}

/** The cells the agent can walk to (1 each), never entering `blocked`. */
std::vector<char> reachable(const World& world, Pos blocked) {
  const Grid& grid = world.grid;
  std::vector<char> reached(static_cast<size_t>(grid.width() * grid.height()), 0);
  std::vector<Pos> stack{world.agent_pos};
  while (!stack.empty()) {
    const Pos p = stack.back();
    stack.pop_back();
    char& cell = reached[static_cast<size_t>(p.y * grid.width() + p.x)];
    if (cell) continue;
    cell = 1;
    for (int dir = 0; dir < 4; ++dir) {
      const Pos next = ahead(p, dir);
      if (grid.contains(next) && next != blocked && world.can_enter(next)) stack.push_back(next);
    }
  }
  return reached;
}

/** Where to drop what is carried (hands must be empty to pick up, and Pickup only counts from
 *  empty hands): a free cell, not in `avoid` (where the instruction finishes), whose filling cuts
 *  the agent off from no cell and no object it reaches now, so a drop never walls in a target or
 *  puts a moved blocker back; any free cell if every one would. */
Goal drop_anywhere(const World& world, const std::vector<Pos>& avoid) {
  const Grid& grid = world.grid;
  const std::vector<char> before = reachable(world, kNowhere);
  auto touches = [&](const std::vector<char>& reached, Pos p) {
    for (int dir = 0; dir < 4; ++dir) {
      const Pos q = ahead(p, dir);
      if (grid.contains(q) && reached[static_cast<size_t>(q.y * grid.width() + q.x)]) return true;
    }
    return false;
  };
  Goal safe{{}, kDrop}, any{{}, kDrop};
  for (int x = 0; x < grid.width(); ++x) {
    for (int y = 0; y < grid.height(); ++y) {
      const Pos c = {x, y};
      if (grid.at(c) != Grid::kEmpty || c == world.agent_pos) continue;
      any.fronts.push_back(c);
      if (contains(avoid, c)) continue;
      const std::vector<char> after = reachable(world, c);
      bool cuts = false;
      for (int i = 0; i < grid.width() * grid.height() && !cuts; ++i) {
        const Pos p = {i % grid.width(), i / grid.width()};
        if (p == c) continue;
        const bool lost_cell = before[static_cast<size_t>(i)] && !after[static_cast<size_t>(i)];
        cuts = lost_cell || (grid.at(p) >= 0 && touches(before, p) && !touches(after, p));
      }
      if (!cuts) safe.fronts.push_back(c);
    }
  }
  return safe.fronts.empty() ? any : safe;
}

/** The cells the leaf finishes facing, whatever must be fetched first. For PutNext: the cells
 *  4-next to a recorded position of a fixed object (what its verifier checks) that are free or,
 *  with `clearable`, hold an object that can be carried away. */
std::vector<Pos> finish_cells(const World& world, const Instruction& leaf, bool clearable, const Sight& sight) {
  switch (leaf.kind()) {
    case Instruction::Kind::kGoTo:
      return sight.filter(leaf.desc().positions);
    case Instruction::Kind::kPutNext: {
      std::vector<Pos> cells;
      for (const Pos fixed : sight.filter(leaf.desc_fixed().positions)) {
        for (int dir = 0; dir < 4; ++dir) {
          const Pos p = ahead(fixed, dir);
          if (!world.grid.contains(p)) continue;
          if (world.grid.at(p) == Grid::kEmpty || (clearable && holds_movable(world, p))) cells.push_back(p);
        }
      }
      return cells;
    }
    default:
      return cells_of(world, leaf.desc().objects, sight);
  }
}

/** The next step towards the leaf, given what the agent carries; `finish` is finish_cells. */
Goal goal_of(const World& world, const Instruction& leaf, const std::vector<Pos>& finish, const Sight& sight) {
  const int16_t carried = world.carrying;
  const std::vector<int16_t>& targets = leaf.desc().objects;
  switch (leaf.kind()) {
    case Instruction::Kind::kGoTo:
      // The verifier checks the front cell against the recorded positions after every action, so
      // the move that faces one already succeeds: the action here is never taken.
      return {finish, kForward};
    case Instruction::Kind::kPickup:
      if (carried != Grid::kEmpty) return drop_anywhere(world, finish);
      return {finish, kPickup};
    case Instruction::Kind::kOpen: {
      // Toggle a door that opens now (an open one shuts, then opens again); a locked one needs its
      // key carried, so fetch a key of a matching locked door's colour first.
      std::vector<Pos> doors;
      std::vector<int16_t> keys;
      for (const int16_t door : targets) {
        const WorldObject& obj = world.objects[door];
        const bool has_key = carried != Grid::kEmpty && world.objects[carried].type == ObjectType::kKey &&
                             world.objects[carried].color == obj.color;
        if (!obj.is_locked || has_key) {
          doors.push_back(obj.cur_pos);
          continue;
        }
        for (size_t i = 0; i < world.objects.size(); ++i) {
          const WorldObject& key = world.objects[i];
          if (key.type == ObjectType::kKey && key.color == obj.color) keys.push_back(static_cast<int16_t>(i));
        }
      }
      // A door it can open, out of sight, is searched for, key in hand.
      if (!doors.empty()) return {sight.filter(std::move(doors)), kToggle};
      if (carried != Grid::kEmpty) return drop_anywhere(world, finish);
      return {cells_of(world, keys, sight), kPickup};
    }
    case Instruction::Kind::kPutNext:
      if (carried == Grid::kEmpty) return {cells_of(world, targets, sight), kPickup};
      if (std::find(targets.begin(), targets.end(), carried) == targets.end()) return drop_anywhere(world, finish);
      return {finish, kDrop};
    case Instruction::Kind::kBefore:
    case Instruction::Kind::kAfter:
      break;  // Instruction::pending() returns leaves only
  }
  return {};
}

/** The start and end of a walk to a pose facing a goal cell. */
struct Walk {
  int first_move = -1;      // -1: the agent faces one already
  Pos blocker = kNowhere;   // the first object the walk steps through, if any
  Pos faced = kNowhere;     // the goal cell faced at the end
};

/** A shortest walk (turns and steps under World::apply_action's rules) to a pose facing one of
 *  `fronts`: a search over (cell, direction) in order of cost. With `through_objects` the walk may
 *  also step through objects that can be carried, each costing more than any number of moves, so
 *  it goes through as few as it can. Ties go to the pose found first: deterministic. */
std::optional<Walk> walk(const World& world, const std::vector<Pos>& fronts, bool through_objects) {
  const Grid& grid = world.grid;
  struct Node {
    int blockers, moves, order;
    Pos pos;
    int dir;
    Walk walk;
  };
  auto later = [](const Node& a, const Node& b) {
    return std::tie(a.blockers, a.moves, a.order) > std::tie(b.blockers, b.moves, b.order);
  };
  std::priority_queue<Node, std::vector<Node>, decltype(later)> frontier(later);
  std::vector<char> done(static_cast<size_t>(grid.width() * grid.height() * 4), 0);
  int order = 0;
  frontier.push({0, 0, order++, world.agent_pos, world.agent_dir, {}});
  while (!frontier.empty()) {
    Node node = frontier.top();
    frontier.pop();
    char& seen = done[static_cast<size_t>((node.pos.y * grid.width() + node.pos.x) * 4 + node.dir)];
    if (seen) continue;
    seen = 1;
    if (contains(fronts, ahead(node.pos, node.dir))) {
      node.walk.faced = ahead(node.pos, node.dir);
      return node.walk;
    }
    for (const int move : {kTurnLeft, kTurnRight, kForward}) {
      Node next = node;
      next.order = order++;
      ++next.moves;
      if (next.walk.first_move < 0) next.walk.first_move = move;
      if (move == kTurnLeft) next.dir = (node.dir + 3) % 4;
      if (move == kTurnRight) next.dir = (node.dir + 1) % 4;
      if (move == kForward) {
        next.pos = ahead(node.pos, node.dir);
        if (!grid.contains(next.pos)) continue;
        if (!world.can_enter(next.pos)) {
          if (!through_objects || !holds_movable(world, next.pos)) continue;
          ++next.blockers;
          if (next.walk.blocker == kNowhere) next.walk.blocker = next.pos;
        }
      }
      frontier.push(next);
    }
  }
  return std::nullopt;
}

/** A move and the goal cell its walk ends facing. */
struct Step {
  int move;
  Pos faced;
};

/** goal.action when the agent faces a goal cell, else the first move of a shortest walk to one. */
std::optional<Step> plan(const World& world, const Goal& goal) {
  const std::optional<Walk> found = walk(world, goal.fronts, false);
  if (!found) return std::nullopt;
  return Step{found->first_move < 0 ? goal.action : found->first_move, found->faced};
}

/** Objects wall off every one of `fronts` (or sit on the one to drop on): free the hands, then pick
 *  up the first object in the way of the walk through fewest objects; the next drop, which keeps
 *  what is reachable reachable, moves it out of the way. */
std::optional<Step> clear_way(const World& world, const std::vector<Pos>& fronts, const std::vector<Pos>& finish) {
  if (world.carrying != Grid::kEmpty) return plan(world, drop_anywhere(world, finish));
  const std::optional<Walk> through = walk(world, fronts, true);
  if (!through) return std::nullopt;
  const Pos blocker = through->blocker != kNowhere ? through->blocker : through->faced;
  if (!holds_movable(world, blocker)) return std::nullopt;
  return plan(world, {{blocker}, kPickup});
}

/** The free cells in a straight line from the agent before the first thing in the way, counted
 *  no further than the agent sees that way. */
int open_run(const World& world, int dir) {
  const int reach = dir == world.agent_dir ? kViewSize - 1 : kViewSize / 2;
  int run = 0;
  for (Pos p = ahead(world.agent_pos, dir); run < reach && world.grid.contains(p) && world.can_enter(p); p = ahead(p, dir)) ++run;
  return run;
}

/** Where nothing the instruction needs is in sight: walk straight on; where the way is blocked,
 *  turn to the side with more open cells (left on a tie). Three moves in ten (from `seed`) turn at
 *  random instead, which breaks the loops a fixed rule walks among objects. */
int search_move(const World& world, uint64_t seed) {
  std::mt19937_64 rng(seed);
  if (std::uniform_real_distribution<double>(0.0, 1.0)(rng) < 0.3) return std::bernoulli_distribution(0.5)(rng) ? kTurnLeft : kTurnRight;
  if (open_run(world, world.agent_dir) > 0) return kForward;
  return open_run(world, (world.agent_dir + 1) % 4) > open_run(world, (world.agent_dir + 3) % 4) ? kTurnRight : kTurnLeft;
}

/** What a step heads for, in the observation's words: the object it faces at the end, or for a
 *  drop next to a fixed object (PutNext) that object; "free cell" for any other drop. */
std::string aim_of(const World& world, const Instruction& leaf, Pos faced) {
  if (world.grid.at(faced) >= 0) return world.phrase_at(faced);
  if (leaf.kind() == Instruction::Kind::kPutNext) {
    for (int dir = 0; dir < 4; ++dir) {
      const Pos p = ahead(faced, dir);
      if (world.grid.contains(p) && contains(leaf.desc_fixed().positions, p) && world.grid.at(p) >= 0) return world.phrase_at(p);
    }
  }
  return "free cell";
}

}  // namespace

ExpertMove expert_move(const BabyAIEnv& env, uint64_t seed, ExpertSight sight_kind) {
  const World& world = env.level().world;
  const Instruction& leaf = env.level().instruction->pending();
  const Sight sight(world, sight_kind == ExpertSight::kView);
  // Fetching a key or the object to move is no use while the cells to finish at are walled off;
  // cells out of sight are not known to be.
  const std::vector<Pos> finish = finish_cells(world, leaf, false, sight);
  const bool can_finish = (sight.view_bound() && finish.empty()) || walk(world, finish, false).has_value();
  const Goal goal = goal_of(world, leaf, finish, sight);
  if (sight.view_bound() && goal.fronts.empty()) return {search_move(world, seed), "search"};
  std::optional<Step> step = can_finish ? plan(world, goal) : std::nullopt;
  if (!step) step = clear_way(world, can_finish ? goal.fronts : finish_cells(world, leaf, true, sight), finish);
  if (step) return {step->move, aim_of(world, leaf, step->faced)};
  // No way even through objects (a target gone, say: a toggled box vanishes): move, pick up or
  // drop at random. Never toggle, which would destroy a box.
  static constexpr int kRandomMoves[] = {kTurnLeft, kTurnRight, kForward, kPickup, kDrop};
  std::mt19937_64 rng(seed);
  return {kRandomMoves[std::uniform_int_distribution<int>(0, 4)(rng)], "stuck"};
}

}  // namespace turnrl::envs::babyai
