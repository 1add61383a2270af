#include "envs/babaisai/babaisai_expert.h"

#include <deque>
#include <optional>
#include <random>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "envs/babaisai/text.h"

namespace turnrl::envs::babaisai {
namespace {

/** States the breadth-first search may visit (about 0.5 s on one core): most levels' shortest
 *  wins lie within it from the start. Where none does (two_room-make_win, measured: 0 of 2 seeds,
 *  nor with 400,000 states in 4 minutes), a search pruned by novelty takes over. */
constexpr size_t kMaxStates = 30000;
/** States the novelty-pruned search may keep; where it finds no win either, the expert moves at random. */
constexpr size_t kMaxNoveltyStates = 200000;
/** Remembered states (per thread) before the memory starts afresh. */
constexpr size_t kMaxRemembered = 1 << 22;

uint64_t state_hash(const World& world) {
  StateWriter out;
  world.write_grid(out);
  return std::hash<std::string>{}(out.take());
}

/** What earlier searches found, by state: a search per episode rather than per turn.
 *  - the next move of each state on a win found earlier: any move on a shortest win is the
 *    expert's move, so following a found plan gives the same kind of answer as searching again;
 *  - kNoPlan for every state a failed search visited: a search from one of them would see much
 *    the same states and fail again, so the expert moves at random at once. */
constexpr int kNoPlan = -1;
std::unordered_map<uint64_t, int>& remembered() {
  thread_local std::unordered_map<uint64_t, int> states;
  return states;
}

void remember_plan(const World& start, const std::vector<int>& moves) {
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

/** Where each object that can move stands, as atoms (object x cell); border walls never move. */
std::vector<uint32_t> object_cells(const World& world) {
  std::vector<uint32_t> atoms;
  const int cells = world.grid.cell_count();
  for (int k = 0; k < cells; ++k) {
    for (const ObjectId id : world.grid.stack(world.grid.pos_of(k))) {
      if (world.objects[id].kind != Kind::kBorder) atoms.push_back(static_cast<uint32_t>(id * cells + k));
    }
  }
  return atoms;
}

/** IW(2) (Lipovetzky and Geffner 2012): a state is worth expanding only where it puts some pair of
 *  objects on cells that no state before it did. A level's wins are sequences of such pairs (Baba
 *  beside a word, the word beside "is", Baba on the winning thing), so the search reaches wins far
 *  beyond the breadth-first budget while keeping a number of states that grows with the pairs. */
class PairNovelty {
 public:
  /** True when some pair (or single atom) of `atoms` is new; records all of them. */
  bool novel(const std::vector<uint32_t>& atoms) {
    bool any = false;
    for (size_t i = 0; i < atoms.size(); ++i) {
      any |= seen_.insert(pair_key(atoms[i], atoms[i])).second;
      for (size_t j = i + 1; j < atoms.size(); ++j) any |= seen_.insert(pair_key(atoms[i], atoms[j])).second;
    }
    return any;
  }

 private:
  static uint64_t pair_key(uint32_t a, uint32_t b) { return a < b ? (uint64_t{a} << 32) | b : (uint64_t{b} << 32) | a; }
  std::unordered_set<uint64_t> seen_;
};

/** The moves of a win from `start` found breadth first within `max_states` kept states (pruned by
 *  novelty when `prune` is set), or none; every state it meets goes into `seen`. */
std::optional<std::vector<int>> find_win(const World& start, size_t max_states, bool prune, std::unordered_set<uint64_t>& seen) {
  struct Node {
    World world;
    std::vector<int> moves;
  };
  PairNovelty novelty;
  if (prune) novelty.novel(object_cells(start));
  seen.insert(state_hash(start));
  std::deque<Node> frontier;
  frontier.push_back({start, {}});
  size_t kept = 1;
  while (!frontier.empty() && kept < max_states) {
    const Node node = std::move(frontier.front());
    frontier.pop_front();
    for (int action = kUp; action <= kLeft; ++action) {
      Node next{node.world, node.moves};
      next.moves.push_back(action);
      const StepOutcome outcome = next.world.step(action);
      if (outcome.done) {
        if (outcome.reward <= 0) continue;  // lost, or out of steps
        return next.moves;
      }
      if (!you_position(next.world) || !seen.insert(state_hash(next.world)).second) continue;
      if (prune && !novelty.novel(object_cells(next.world))) continue;
      frontier.push_back(std::move(next));
      ++kept;
    }
  }
  return std::nullopt;
}

}  // namespace

int expert_action(const BabaIsAIEnv& env, uint64_t seed) {
  const World& start = env.world();
  const uint64_t start_hash = state_hash(start);
  std::mt19937_64 rng(seed);
  auto random_move = [&rng] { return std::uniform_int_distribution<int>(kUp, kLeft)(rng); };
  if (const auto known = remembered().find(start_hash); known != remembered().end()) {
    return known->second == kNoPlan ? random_move() : known->second;
  }
  std::unordered_set<uint64_t> seen, pruned_seen;
  std::optional<std::vector<int>> plan = find_win(start, kMaxStates, false, seen);
  if (!plan) plan = find_win(start, kMaxNoveltyStates, true, pruned_seen);
  if (!plan) {
    remember_failure(seen);
    return random_move();
  }
  remember_plan(start, *plan);
  return plan->front();
}

}  // namespace turnrl::envs::babaisai
