#pragma once
// A scripted BabaIsAI player that reads the level directly: a breadth-first search over the
// level's own step (every "you" thing moves, rules are re-read) for the shortest way to the next
// step of the level's plan (break a rule, make a rule, reach the win) or to a win, in the steps
// left, never through a step that breaks every "you" rule (BALROG would reset the level) or loses.
// The demonstrations of a format stage (`format.policy: expert`).
#include <cstdint>

#include "envs/babaisai/babaisai_env.h"
#include "envs/expert.h"

namespace turnrl::envs::babaisai {

/** The first move of a shortest way from the env's current state to its plan's first step not yet
 *  done (or to a win), its aim the observation's line of what the way heads for; a random move
 *  (from `seed`), marked as a guess and with no aim, where the search finds none within its budget
 *  of states. Requires reset(). */
ExpertMove expert_move(const BabaIsAIEnv& env, uint64_t seed);

}  // namespace turnrl::envs::babaisai
