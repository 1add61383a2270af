#pragma once
// Greedy evaluation of an agent on fixed seeds per task: the one code path behind the trainer's
// periodic evaluation and `turnrl eval --run`, so both report the same numbers for the same seeds.
#include <cstdint>
#include <functional>
#include <map>
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
  /** Each episode's progression by seed offset: episode i played first_seed + i. */
  std::vector<double> episode_progression;
  double mean_return = 0.0, mean_length = 0.0;
  /** Envs with achievements (Crafter): the share of episodes that unlocked each one, and Crafter's
   *  score over them, exp(mean ln(1 + rate%)) - 1 in percent (Hafner 2021, sec. 3). */
  std::map<std::string, double> unlock_rates;
  double crafter_score = 0.0;
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

/** Crafter's score (percent) from per-achievement unlock rates in [0, 1]. */
double crafter_score(const std::map<std::string, double>& unlock_rates);

/** "collect_wood 0.90, place_table 0.40, ..." (the unlocked ones, most frequent first). */
std::string unlock_summary(const TaskScore& score);

/** `{"tasks": {id: {"episodes", "success", "progression", "progression_se"[, "unlock_rates",
 *  "crafter_score"]}}, "overall": {...}}` (overall: task means). `progression_se` is the standard
 *  error from `episode_progression`: a task's sample spread / sqrt(episodes); overall, the episodes
 *  of one seed offset count as one sample, since every task plays the same seeds and they need not
 *  be independent across tasks (cluster-robust, clustered by seed). */
nlohmann::json scores_json(const std::vector<TaskScore>& scores);

}  // namespace turnrl::trainer
