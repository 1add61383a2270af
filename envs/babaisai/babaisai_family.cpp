#include "envs/babaisai/babaisai_family.h"

#include <cstdio>
#include <optional>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "envs/babaisai/babaisai_env.h"
#include "envs/babaisai/babaisai_expert.h"
#include "envs/babaisai/babaisai_golden.h"

namespace turnrl::envs::babaisai {
const LevelId* find_level(std::string_view name) {
  for (const LevelId& level : balrog_levels()) {
    if (level.name == name) return &level;
  }
  return nullptr;
}

namespace {

const std::vector<IntOption>& options_accepted() {
  static const std::vector<IntOption> options = {
      {"max_steps", 100, 1, 1000000, "turn limit of an episode"},
      {"rule_change_reward", 0, 0, 100, "reward in percent of a win for each rule formed or broken, once an episode"}};
  return options;
}

std::unique_ptr<Env> make(const std::string& id, const nlohmann::json& options) {
  const std::vector<int> values = read_int_options(id, options, options_accepted());
  const LevelId* level = id.starts_with(kIdPrefix) ? find_level(std::string_view(id).substr(kIdPrefix.size())) : nullptr;
  if (!level) throw std::invalid_argument("unknown babaisai env id '" + id + "'");
  return std::make_unique<BabaIsAIEnv>(id, level->config, values[0], values[1]);
}

}  // namespace

EnvFamily babaisai_family() {
  EnvFamily family;
  family.name = "babaisai";
  for (const LevelId& level : balrog_levels()) family.ids.push_back(std::string(kIdPrefix) + level.name);
  family.actions = BabaIsAIEnv::action_list();
  family.options = describe(options_accepted());
  // The words of BALROG's BabaIsAI prompts and observations (beyond BabyAI's).
  family.vocabulary = {
    "\"", "[", "]", "`", "/", "Active", "BABA", "Baba", "Consider", "Examine", "IS", "Identify", "If", "Is",
    "Objects", "Property", "Remember", "STOP", "Sometimes", "Subject", "Think", "WIN", "YOU", "all", "alter",
    "apart", "around", "as", "baba", "be", "behaviors", "blocks", "breaking", "but", "carefully", "changed",
    "changing", "completely", "condition", "counts", "create", "creatively", "current", "defined",
    "different", "down", "existing", "for", "formed", "forming", "how", "idle", "immovable", "involves",
    "level", "making", "map", "move", "moving", "new", "noting", "objects", "on", "ones", "only",
    "properties", "puzzle", "reach", "rule", "rules", "similar", "solution", "stop", "stuck", "this", "try",
    "unexpected", "usually", "wait", "ways", "where", "which", "win", "yourself"};
  family.make = make;
  // The prompt shows the whole level, so the expert sees no more than the model with either sight.
  family.expert_sights = {ExpertSight::kFull, ExpertSight::kView};
  family.expert = [](const Env& env, uint64_t seed, ExpertSight) { return babaisai::expert_move(expert_env<BabaIsAIEnv>(env), seed); };
  family.replayer = make_golden_replayer;
  return family;
}

}  // namespace turnrl::envs::babaisai
