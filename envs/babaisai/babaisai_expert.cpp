#include "envs/babaisai/babaisai_expert.h"

#include <cstdlib>
#include <optional>
#include <random>
#include <regex>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "envs/babaisai/text.h"

namespace turnrl::envs::babaisai {
namespace {

/** States one search may visit (about 0.5 s on one core). With the plan's steps searched one at a
 *  time every level's next step lies well within it; the whole way to a win on the two-room make_win
 *  levels does not (0 of 2 seeds, nor with 400,000 states in 4 minutes). */
constexpr size_t kMaxStates = 30000;
/** Remembered states (per thread) before the memory starts afresh. */
constexpr size_t kMaxRemembered = 1 << 22;

/** One step of the state key's mixing: splitmix64's finaliser, a bijection with full avalanche. */
uint64_t mix(uint64_t hash, uint64_t word) {
  uint64_t z = hash ^ word;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

/** The search's key for a state: what World::write_grid writes (every cell's stack of packed
 *  objects), mixed object by object with its cell and height rather than built as bytes, since it
 *  is the search's most frequent step; empty cells add nothing. */
uint64_t state_hash(const World& world) {
  const Grid& grid = world.grid;
  uint64_t hash = mix(0, static_cast<uint64_t>(grid.width()) << 32 | static_cast<uint64_t>(grid.height()));
  for (int i = 0; i < grid.cell_count(); ++i) {
    const CellStack& stack = grid.stack(i);
    for (size_t height = 0; height < stack.size(); ++height) {
      hash = mix(hash, world.objects[stack[height]].packed() | static_cast<uint64_t>(height) << 41 | static_cast<uint64_t>(i) << 48);
    }
  }
  return hash;
}

/** One step of the level's plan: break a rule, make a rule, or reach the win. */
struct PlanStep {
  enum class Kind { kBreak, kMake, kGoto } kind;
  Thing thing = Thing::kBall;
  Property property = Property::kGoal;

  /** Whether `world` has done this step; a win is seen in the step's outcome instead. */
  bool done_in(const World& world) const {
    switch (kind) {
      case Kind::kBreak: return !world.rules.holds(thing, property);
      case Kind::kMake: return world.rules.holds(thing, property);
      case Kind::kGoto: return false;
    }
    return false;
  }
};

/** The thing or property whose display name is `name`, as the generator writes them in its plans. */
Thing thing_named(const std::string& name) {
  for (int k = 0; k < kNumThings; ++k) {
    if (thing_display_name(static_cast<Thing>(k)) == name) return static_cast<Thing>(k);
  }
  throw std::logic_error("babaisai expert: '" + name + "' in a level plan names no thing");
}

Property property_named(const std::string& name) {
  for (int k = 0; k < kNumProperties; ++k) {
    if (property_display_name(static_cast<Property>(k)) == name) return static_cast<Property>(k);
  }
  throw std::logic_error("babaisai expert: '" + name + "' in a level plan names no property");
}

/** The generator's plan ("break[wall is stop], make[ball is win], goto[ball]") as steps. */
std::vector<PlanStep> parse_plan(const std::string& plan) {
  static const std::regex step_pattern(R"((break|make)\[(\w+) is (\w+)\]|goto\[(\w+)\])");
  std::vector<PlanStep> steps;
  for (auto it = std::sregex_iterator(plan.begin(), plan.end(), step_pattern); it != std::sregex_iterator(); ++it) {
    const std::smatch& m = *it;
    if (m[4].matched) {
      steps.push_back({PlanStep::Kind::kGoto, thing_named(m[4])});
    } else {
      steps.push_back({m[1] == "break" ? PlanStep::Kind::kBreak : PlanStep::Kind::kMake, thing_named(m[2]), property_named(m[3])});
    }
  }
  if (steps.empty() || steps.back().kind != PlanStep::Kind::kGoto) {
    throw std::logic_error("babaisai expert: level plan '" + plan + "' does not end in a goto");
  }
  return steps;
}

/** What earlier searches found, by state: a search per plan step rather than per turn.
 *  - the next move of each state on a way found earlier: any move on a shortest way to the step is
 *    the expert's move, so following a found way gives the same kind of answer as searching again;
 *  - kNoPlan for every state a failed search visited: a search from one of them would see much
 *    the same states and fail again, so the expert moves at random at once. */
constexpr int kNoPlan = -1;
std::unordered_map<uint64_t, int>& remembered() {
  thread_local std::unordered_map<uint64_t, int> states;
  return states;
}

void remember_way(const World& start, const std::vector<int>& moves) {
  auto& states = remembered();
  if (states.size() + moves.size() > kMaxRemembered) states.clear();
  World world = start;
  for (const int move : moves) {
    states[state_hash(world)] = move;
    world.step(move);
  }
}

void remember_failure(const std::unordered_set<uint64_t>& visited) {
  auto& states = remembered();
  if (states.size() + visited.size() > kMaxRemembered) states.clear();
  for (const uint64_t hash : visited) states.emplace(hash, kNoPlan);
}

/** Breadth-first search for the shortest way to a win or to a state that has done `step`; the way's
 *  moves, or none where the budget of states holds neither. */
std::vector<int> shortest_way(const World& start, uint64_t start_hash, const PlanStep& step) {
  struct Node {
    World world;
    size_t parent;
    int move;
  };
  std::vector<Node> nodes{{start, 0, kIdle}};
  std::unordered_set<uint64_t> seen{start_hash};
  auto way_to = [&nodes](size_t last) {
    std::vector<int> moves;
    for (size_t i = last; i != 0; i = nodes[i].parent) moves.push_back(nodes[i].move);
    return std::vector<int>(moves.rbegin(), moves.rend());
  };
  for (size_t next = 0; next < nodes.size() && seen.size() < kMaxStates; ++next) {
    for (int action = kUp; action <= kLeft; ++action) {
      Node child{nodes[next].world, next, action};
      const StepOutcome outcome = child.world.step(action);
      if (outcome.done && outcome.reward <= 0) continue;  // lost, or out of steps
      if (!outcome.done && !you_position(child.world)) continue;
      if (!outcome.done && !seen.insert(state_hash(child.world)).second) continue;
      nodes.push_back(std::move(child));
      if (outcome.done || step.done_in(nodes.back().world)) return way_to(nodes.size() - 1);
    }
  }
  remember_failure(seen);
  return {};
}

/** Moves the aim follows along the remembered way at most (a way to one plan step is shorter). */
constexpr int kMaxAimMoves = 100;

/** The cell of every rule block, by object id (-1 for other objects). */
std::vector<int> rule_block_cells(const World& world) {
  std::vector<int> cells(world.objects.size(), -1);
  for (int k = 0; k < world.grid.cell_count(); ++k) {
    for (const ObjectId id : world.grid.stack(k)) {
      const Kind kind = world.objects[id].kind;
      if (kind != Kind::kThing && kind != Kind::kBorder) cells[id] = k;
    }
  }
  return cells;
}

/** What the way on from `start` heads for, as the observation's line of it: the rule block it pushes
 *  next, with the push ("rule `ball` 2 steps to the right push up"), or else the win it steps onto
 *  ("door 2 steps to the right"). Found by following the remembered moves. The line puts where the
 *  target lies next to the action, so a model copies it from the prompt rather than looking up the
 *  win's name in the rules and then its line among the objects. `start_hash`: state_hash(start). */
std::string way_aim(const World& start, uint64_t start_hash) {
  const std::optional<Pos> player = you_position(start);
  if (!player) return "";
  World world = start;
  uint64_t hash = start_hash;
  std::vector<int> before = rule_block_cells(world);
  for (int n = 0; n < kMaxAimMoves; ++n) {
    const auto known = remembered().find(hash);
    if (known == remembered().end() || known->second == kNoPlan) break;
    const std::optional<Pos> you = you_position(world);
    const StepOutcome outcome = world.step(known->second);
    std::vector<int> after = rule_block_cells(world);
    int pushed = -1;
    for (size_t id = 0; id < before.size(); ++id) {
      if (before[id] < 0 || before[id] == after[id]) continue;
      // In a chain of blocks, the one next to the player names the push.
      const Pos from = world.grid.pos_of(before[id]);
      const int distance = you ? std::abs(from.x - you->x) + std::abs(from.y - you->y) : 0;
      if (pushed < 0 || distance == 1) pushed = static_cast<int>(id);
    }
    if (pushed >= 0) {
      const std::string line = object_line(start, before[static_cast<size_t>(pushed)], *player);
      return line.empty() ? "" : line + " push " + BabaIsAIEnv::action_list()[static_cast<size_t>(known->second)].name;
    }
    if (outcome.done) {
      const std::optional<Pos> end = you_position(world);
      return outcome.reward > 0 && end ? object_line(start, start.grid.index(*end), *player) : "";
    }
    before = std::move(after);
    hash = state_hash(world);
  }
  return "";
}

}  // namespace

ExpertMove expert_move(const BabaIsAIEnv& env, uint64_t seed) {
  const World& start = env.world();
  const uint64_t start_hash = state_hash(start);
  std::mt19937_64 rng(seed);
  auto guess = [&rng] { return ExpertMove{std::uniform_int_distribution<int>(kUp, kLeft)(rng), "", true}; };
  if (const auto known = remembered().find(start_hash); known != remembered().end()) {
    return known->second == kNoPlan ? guess() : ExpertMove{known->second, way_aim(start, start_hash)};
  }
  // The plan's first step not yet done: the generator lays each level out for its plan, and a
  // search for one step at a time stays shallow where the whole way to a win does not.
  const std::vector<PlanStep> plan = parse_plan(env.target_plan());
  size_t pending = 0;
  while (plan[pending].done_in(start)) ++pending;
  const std::vector<int> way = shortest_way(start, start_hash, plan[pending]);
  if (way.empty()) return guess();
  remember_way(start, way);
  return {way.front(), way_aim(start, start_hash)};
}

}  // namespace turnrl::envs::babaisai
