#include "envs/babyai/babyai_family.h"

#include <stdexcept>

#include <nlohmann/json.hpp>

#include "envs/babyai/babyai_env.h"
#include "envs/babyai/babyai_expert.h"
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
  const int num_dists = read_num_dists(id, options);
  for (const auto& task : kTasks) {
    if (id == std::string("babyai/") + task.suffix) return std::make_unique<BabyAIEnv>(id, task.task, num_dists);
  }
  throw std::invalid_argument("unknown babyai env id '" + id + "'");
}

}  // namespace

int read_num_dists(const std::string& id, const nlohmann::json& options) {
  return read_int_options(id, options, options_accepted())[0];
}

EnvFamily babyai_family() {
  EnvFamily family;
  family.name = "babyai";
  for (const auto& task : kTasks) family.ids.push_back(std::string("babyai/") + task.suffix);
  family.actions = BabyAIEnv::action_list();
  family.options = describe(options_accepted());
  // The words of BALROG's BabyAI prompts and observations, and of the prompt harness around them.
  family.vocabulary = {
    "!", "'", "(", ")", ",", "-", ".", ":", "<", ">", "?", "0", "1", "2", "3", "4", "5", "6", "7", "8", "9",
    "ACTION", "Action", "action", "agent", "Current", "Defaulted", "Finally", "First", "I", "In", "It",
    "Observation", "Once", "PLAY", "The", "Tips", "You", "Your", "a", "about", "above", "actions", "after",
    "always", "an", "and", "are", "assistant", "at", "ball", "below", "best", "blue", "box", "by", "can",
    "carry", "change", "closed", "contain", "course", "description", "desired", "did", "doesn", "door",
    "drop", "each", "end", "episode", "first", "followed", "following", "form", "forward", "front", "game",
    "go", "goal", "green", "grey", "have", "holding", "in", "interact", "is", "it", "key", "left", "locked",
    "make", "manipulate", "message", "moment", "navigation", "next", "no", "not", "object", "observation",
    "of", "one", "open", "or", "other", "output", "over", "pick", "playing", "possible", "present",
    "previous", "provide", "purple", "put", "red", "repeat", "right", "s", "same", "see", "sense", "short",
    "simple", "single", "step", "steps", "system", "t", "take", "terminates", "text", "that", "the", "then",
    "think", "time", "to", "toggle", "turn", "until", "up", "use", "user", "valid", "wall", "want", "what",
    "will", "with", "yellow", "you"};
  family.make = make;
  family.expert_sights = {ExpertSight::kFull, ExpertSight::kView};
  family.expert = [](const Env& env, uint64_t seed, ExpertSight sight) { return babyai::expert_move(expert_env<BabyAIEnv>(env), seed, sight); };
  family.replayer = make_golden_replayer;
  return family;
}

}  // namespace turnrl::envs::babyai
