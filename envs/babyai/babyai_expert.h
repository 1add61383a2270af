#pragma once
// A scripted BabyAI player that reads the level directly: it takes the part of the instruction
// still to do (a sequence's pending half), turns it into "face one of these cells, then act" (pick
// up, drop, toggle; for "go to" facing is enough), and walks there by a shortest-path search over
// (cell, direction) under Minigrid's own moves. It finishes every level from reset (3,000 seeds
// per task with 8 distractors, at most 34 steps). The demonstrations of a format stage
// (`format.policy: expert`).
#include <cstdint>

#include "envs/babyai/babyai_env.h"
#include "envs/expert.h"

namespace turnrl::envs::babyai {

/** The first move of a shortest way to finish the pending part of the instruction. Where objects
 *  wall off what it must reach, it carries them aside first; where even that cannot help (a target
 *  box toggled away), a random move from `seed`. With view-bound sight it uses only the objects in
 *  the agent's view and, where none it needs is, searches (straight on, turning where blocked and now and
 *  then at random) until one is. Its aim: the object the move heads for in the observation's
 *  words ("red ball 1 step left and 2 steps forward"; for a drop next to PutNext's fixed object,
 *  that object; "free cell" for another drop), "search" or "stuck" (the random move). Requires
 *  reset(). */
ExpertMove expert_move(const BabyAIEnv& env, uint64_t seed, ExpertSight sight);

}  // namespace turnrl::envs::babyai
