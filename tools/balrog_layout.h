#pragma once
// A sweep's results also in BALROG's own layout, so that BALROG's tools (its evaluator's resume,
// collect_and_summarize_results, print_summary_table) and its leaderboard's summary.json read them.
// BALROG's output folder holds one run of one model, so each model gets one:
//   <output_dir>/balrog/<model>/summary.json                       the run: average_progress, ...
//   <output_dir>/balrog/<model>/<env>/<env>_summary.json           per env, with its tasks
//   <output_dir>/balrog/<model>/<env>/<task>/<task>_run_NN.json    per episode (NN: its index in the run)
//   <output_dir>/balrog/<model>/<env>/<task>/<task>_run_NN.csv     its trajectory, a row a step
// with BALROG's env and task names (babyai/goto: babyai, BabyAI-MixedTrainLocal-v0/goto). Written
// from the records of episodes.jsonl, so a rerun fills in what an older sweep lacks.
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tools/eval_config.h"
#include "tools/eval_summary.h"

namespace turnrl::tools {

/** BALROG's name of a task: BabyAI-MixedTrainLocal-v0/<task>, env/<level> (BabaIsAI), default
 *  (crafter/balrog); other ids their part after '/'. */
std::string balrog_task_name(const std::string& env_id);

class BalrogLayout {
 public:
  explicit BalrogLayout(const EvalConfig& config);
  /** Writes the episode files of a finished record of episodes.jsonl; unless `overwrite`, only
   *  where its JSON file is missing. */
  void write_episode(const nlohmann::json& record, bool overwrite) const;
  /** Writes every model's summary.json and <env>_summary.json from the finished episodes. */
  void write_summaries(const std::vector<EpisodeResult>& episodes) const;
  /** The run folder of model `name`. */
  std::filesystem::path run_dir(const std::string& name) const;

 private:
  /** BALROG's `client` and `agent` of model `name` (what its summary.json copies). */
  nlohmann::json client(const std::string& name) const;
  nlohmann::json agent() const;

  const EvalConfig& config_;
};

}  // namespace turnrl::tools
