#pragma once
// Scripted experts: policies that read an env's state directly, the demonstrations a format stage
// can learn from (`format.policy: expert`). Crafter, BabaIsAI and BabyAI have one.
#include <cstdint>

#include "envs/env.h"

namespace turnrl::envs {

/** Whether `env` has a scripted expert. */
bool has_expert(const Env& env);
/** The expert's action (an index into env.actions()) in the env's current state; `seed` drives
 *  its random choices. Throws std::invalid_argument when the env has no expert. */
int expert_action(const Env& env, uint64_t seed);

}  // namespace turnrl::envs
