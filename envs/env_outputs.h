#pragma once
// An env's outputs as JSON, in one shape shared by golden replay through the Env API and by the
// env server's replies (so a golden expectation is a subset of a server reply).
#include <nlohmann/json.hpp>

#include "envs/env.h"

namespace turnrl::envs {

/** {"long_term": ..., "short_term": ...} */
nlohmann::json observation_json(const TextObservation& observation);
TextObservation observation_from_json(const nlohmann::json& observation);

/** What a reset yields: observation, instruction_prompt, goal, max_steps, progression, and
 *  reference_answer where the env has one. */
nlohmann::json episode_outputs(const Env& env);
/** What a step yields: observation, reward, terminated, truncated, progression, and
 *  reference_answer where the env has one. */
nlohmann::json step_outputs(const Env& env, const StepResult& result);

}  // namespace turnrl::envs
