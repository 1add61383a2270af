#include "envs/env_outputs.h"

namespace turnrl::envs {

nlohmann::json observation_json(const TextObservation& observation) {
  return {{"long_term", observation.long_term}, {"short_term", observation.short_term}};
}

TextObservation observation_from_json(const nlohmann::json& observation) {
  return {observation.at("long_term").get<std::string>(), observation.at("short_term").get<std::string>()};
}

namespace {

/** Left out when empty, so the outputs of envs without answers stay as they were. */
void add_reference_answer(nlohmann::json& outputs, const Env& env) {
  if (std::string answer = env.reference_answer(); !answer.empty()) outputs["reference_answer"] = std::move(answer);
}

}  // namespace

nlohmann::json episode_outputs(const Env& env) {
  nlohmann::json outputs = {{"observation", observation_json(env.observe_text())},
                            {"instruction_prompt", env.instruction_prompt()},
                            {"goal", env.goal()},
                            {"max_steps", env.max_steps()},
                            {"progression", env.progression()}};
  add_reference_answer(outputs, env);
  return outputs;
}

nlohmann::json step_outputs(const Env& env, const StepResult& result) {
  nlohmann::json outputs = {{"observation", observation_json(env.observe_text())},
                            {"reward", result.reward},
                            {"terminated", result.terminated},
                            {"truncated", result.truncated},
                            {"progression", env.progression()}};
  add_reference_answer(outputs, env);
  return outputs;
}

}  // namespace turnrl::envs
