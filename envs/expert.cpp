#include "envs/expert.h"

#include <stdexcept>

#include "envs/babaisai/babaisai_expert.h"
#include "envs/babyai/babyai_expert.h"
#include "envs/crafter/crafter_expert.h"

namespace turnrl::envs {

bool has_expert(const Env& env) {
  return dynamic_cast<const crafter::CrafterEnv*>(&env) != nullptr || dynamic_cast<const babaisai::BabaIsAIEnv*>(&env) != nullptr ||
         dynamic_cast<const babyai::BabyAIEnv*>(&env) != nullptr;
}

int expert_action(const Env& env, uint64_t seed) {
  if (const auto* crafter_env = dynamic_cast<const crafter::CrafterEnv*>(&env)) return crafter::expert_action(*crafter_env, seed);
  if (const auto* baba_env = dynamic_cast<const babaisai::BabaIsAIEnv*>(&env)) return babaisai::expert_action(*baba_env, seed);
  if (const auto* babyai_env = dynamic_cast<const babyai::BabyAIEnv*>(&env)) return babyai::expert_action(*babyai_env, seed);
  throw std::invalid_argument("env " + env.id() + " has no scripted expert (Crafter, BabaIsAI and BabyAI have one)");
}

}  // namespace turnrl::envs
