#pragma once
// Greedy evaluation of an agent on fixed seeds per task: the one code path behind the trainer's
// periodic evaluation and `turnrl eval --run`, so both report the same numbers for the same seeds.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "agents/agent.h"
#include "trainer/rollout/episode_runner.h"
#include "trainer/rollout/turn_settings.h"

namespace turnrl::trainer {

struct TaskScore {
  std::string task;
  int episodes = 0;
  double success = 0.0;      // share of episodes with full progression
  double progression = 0.0;  // BALROG's progression, mean over episodes
  double mean_return = 0.0, mean_length = 0.0;
};

struct EvaluationSpec {
  std::vector<std::string> tasks;
  nlohmann::json env_options = nlohmann::json::object();  // the same for every task (as in training)
  TurnSettings turn;
  uint64_t first_seed = 0;  // episode i of every task uses first_seed + i
  int episodes = 0;         // per task
  double progress_s = 0.0;  // seconds between progress lines (0: none)
};

/** Runs every episode (all tasks at once; agents without asynchronous submit answer two halves in
 *  turn); one score per task, in
 *  spec order. `on_episode` (optional) sees each finished episode. */
std::vector<TaskScore> evaluate(const EvaluationSpec& spec, agents::Agent& agent,
                                const std::function<void(const EpisodeLog&)>& on_episode = nullptr);

/** `{"tasks": {id: {"episodes", "success", "progression"}}, "overall": {...}}` (overall: task means). */
nlohmann::json scores_json(const std::vector<TaskScore>& scores);

}  // namespace turnrl::trainer
