#include "envs/babyai/babyai_family.h"

#include <stdexcept>

#include <nlohmann/json.hpp>

#include "envs/babyai/babyai_env.h"
#include "envs/babyai/babyai_golden.h"

namespace turnrl::envs::babyai {

const TaskId kTasks[5] = {{"goto", Task::kGoTo},
                          {"pickup", Task::kPickup},
                          {"open", Task::kOpen},
                          {"putnext", Task::kPutNext},
                          {"pick_up_seq_go_to", Task::kPickUpSeqGoTo}};

namespace {

const std::vector<IntOption>& options_accepted() {
  static const std::vector<IntOption> options = {{"num_dists", 0, 0, 20, "distractor objects (BALROG's leaderboard: 8)"}};
  return options;
}

std::unique_ptr<Env> make(const std::string& id, const nlohmann::json& options) {
  const int num_dists = read_int_options(id, options, options_accepted())[0];
  for (const auto& task : kTasks) {
    if (id == std::string("babyai/") + task.suffix) return std::make_unique<BabyAIEnv>(id, task.task, num_dists);
  }
  throw std::invalid_argument("unknown babyai env id '" + id + "'");
}

}  // namespace

EnvFamily babyai_family() {
  EnvFamily family;
  family.name = "babyai";
  for (const auto& task : kTasks) family.ids.push_back(std::string("babyai/") + task.suffix);
  family.actions = BabyAIEnv::action_list();
  family.options = describe(options_accepted());
  family.make = make;
  family.replayer = make_golden_replayer;
  return family;
}

}  // namespace turnrl::envs::babyai
