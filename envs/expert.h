#pragma once
// Scripted experts: policies that read an env's state directly, the demonstrations a format stage
// can learn from (`format.policy: expert`). A family offers one through its EnvFamily::expert hook
// (envs/registry.h); Crafter, BabaIsAI and BabyAI have one.
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "envs/env.h"

namespace turnrl::envs {

/** What the expert may read. kFull: the whole state. kView: only what the prompt shows, so a model
 *  can follow its choices: where the objects it needs are out of the agent's view it searches
 *  (BabyAI; BabaIsAI shows the whole level, so its expert is the same either way). */
enum class ExpertSight { kFull, kView };

/** "full", "view": the names of ExpertSight's values, in their order (configs write them). */
const std::vector<std::string>& expert_sight_names();
/** "full" or "view"; throws std::invalid_argument for anything else. */
ExpertSight parse_expert_sight(const std::string& name);

/** Whether `env` has a scripted expert with that sight. */
bool has_expert(const Env& env, ExpertSight sight = ExpertSight::kFull);
/** The expert's choice: an action (an index into env.actions()) and, where the env's expert
 *  names one, what the action is for in the prompt's words (its reasoning, the `{aim}` of a reply
 *  template): BabyAI's the observation's line it heads for, BabaIsAI's the line of the block it pushes next
 *  (with the push) or of the win, Crafter's its goal; empty elsewhere. */
struct ExpertMove {
  int action = 0;
  std::string aim;
  /** The expert found no way on (BabaIsAI: no plan step within its search's budget) and moves at
   *  random: a move to play, not one to learn from (DAgger leaves such labels out). */
  bool guess = false;
};

/** `env` as the family's own env type, which its expert reads; std::invalid_argument when it is
 *  another (an env played elsewhere, e.g. on an env server, has no state here to read). */
template <typename FamilyEnv>
const FamilyEnv& expert_env(const Env& env) {
  if (const auto* own = dynamic_cast<const FamilyEnv*>(&env)) return *own;
  throw std::invalid_argument("env " + env.id() + " has no scripted expert here: the expert reads the state of an env in this process");
}

/** The expert's move in the env's current state; `seed` drives its random choices. Throws
 *  std::invalid_argument when the env has no such expert. */
ExpertMove expert_move(const Env& env, uint64_t seed, ExpertSight sight = ExpertSight::kFull);
/** expert_move's action. */
int expert_action(const Env& env, uint64_t seed, ExpertSight sight = ExpertSight::kFull);

}  // namespace turnrl::envs
