#include "envs/expert.h"

#include <stdexcept>

#include "envs/babaisai/babaisai_expert.h"
#include "envs/babyai/babyai_expert.h"
#include "envs/crafter/crafter_expert.h"

namespace turnrl::envs {

const std::vector<std::string>& expert_sight_names() {
  static const std::vector<std::string> names = {"full", "view"};
  return names;
}

ExpertSight parse_expert_sight(const std::string& name) {
  const std::vector<std::string>& names = expert_sight_names();
  for (size_t i = 0; i < names.size(); ++i) {
    if (names[i] == name) return static_cast<ExpertSight>(i);
  }
  throw std::invalid_argument("expert sight must be full or view, got '" + name + "'");
}

bool has_expert(const Env& env, ExpertSight sight) {
  // Crafter's expert reads the whole map, and its prompt shows a 9x7 window of it.
  if (dynamic_cast<const crafter::CrafterEnv*>(&env) != nullptr) return sight == ExpertSight::kFull;
  return dynamic_cast<const babaisai::BabaIsAIEnv*>(&env) != nullptr || dynamic_cast<const babyai::BabyAIEnv*>(&env) != nullptr;
}

ExpertMove expert_move(const Env& env, uint64_t seed, ExpertSight sight) {
  if (!has_expert(env, sight)) {
    throw std::invalid_argument("env " + env.id() + " has no scripted expert" + (sight == ExpertSight::kView ? " bound to its view (BabaIsAI and BabyAI have one)" : " (Crafter, BabaIsAI and BabyAI have one)"));
  }
  if (const auto* crafter_env = dynamic_cast<const crafter::CrafterEnv*>(&env)) return {crafter::expert_action(*crafter_env, seed), ""};
  if (const auto* baba_env = dynamic_cast<const babaisai::BabaIsAIEnv*>(&env)) return {babaisai::expert_action(*baba_env, seed), ""};
  return babyai::expert_move(dynamic_cast<const babyai::BabyAIEnv&>(env), seed, sight);
}

int expert_action(const Env& env, uint64_t seed, ExpertSight sight) { return expert_move(env, seed, sight).action; }

}  // namespace turnrl::envs
