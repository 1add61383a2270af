#include "envs/expert.h"

#include <algorithm>
#include <stdexcept>

#include "envs/registry.h"

namespace turnrl::envs {
namespace {

const char* sight_name(ExpertSight sight) { return sight == ExpertSight::kView ? "view" : "full"; }

/** The families whose expert plays with `sight`, for error messages. */
std::string families_with_expert(ExpertSight sight) {
  std::string names;
  for (const EnvFamily& family : env_families()) {
    if (std::ranges::find(family.expert_sights, sight) == family.expert_sights.end()) continue;
    names += (names.empty() ? "" : ", ") + family.name;
  }
  return names.empty() ? "none" : names;
}

}  // namespace

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
  const EnvFamily& family = family_of(env.id());
  return family.expert && std::ranges::find(family.expert_sights, sight) != family.expert_sights.end();
}

ExpertMove expert_move(const Env& env, uint64_t seed, ExpertSight sight) {
  if (!has_expert(env, sight)) {
    throw std::invalid_argument("env " + env.id() + " has no scripted expert with " + sight_name(sight) + " sight (families with one: " +
                                families_with_expert(sight) + ")");
  }
  return family_of(env.id()).expert(env, seed, sight);
}

int expert_action(const Env& env, uint64_t seed, ExpertSight sight) { return expert_move(env, seed, sight).action; }

}  // namespace turnrl::envs
