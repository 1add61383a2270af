#include "envs/env_outputs.h"

namespace turnrl::envs {

nlohmann::json observation_json(const TextObservation& observation) {
  return {{"long_term", observation.long_term}, {"short_term", observation.short_term}};
}

TextObservation observation_from_json(const nlohmann::json& observation) {
  return {observation.at("long_term").get<std::string>(), observation.at("short_term").get<std::string>()};
}

nlohmann::json episode_outputs(const Env& env) {
  return {{"observation", observation_json(env.observe_text())},
          {"instruction_prompt", env.instruction_prompt()},
          {"goal", env.goal()},
          {"max_steps", env.max_steps()},
          {"progression", env.progression()}};
}

nlohmann::json step_outputs(const Env& env, const StepResult& result) {
  return {{"observation", observation_json(env.observe_text())},
          {"reward", result.reward},
          {"terminated", result.terminated},
          {"truncated", result.truncated},
          {"progression", env.progression()}};
}

}  // namespace turnrl::envs
