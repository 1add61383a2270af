#pragma once
// BALROG's progression summary (balrog.md 1.3): per task and per environment, mean x100 and
// SE = population std / sqrt(n); per model, the unweighted mean of env means with
// SE = sqrt(sum SE_env^2) / n_envs.
#include <map>
#include <string>
#include <vector>

namespace turnrl::tools {

struct EpisodeResult {
  std::string model, env, task;
  double progression = 0.0;  // in [0, 1]
};

struct SummaryRow {
  std::string model, env, task;  // env "all": the model's overall; task "all": the env's row
  size_t episodes = 0;
  double mean = 0.0, standard_error = 0.0;  // percent
};

/** Rows per (model, env, task), then per (model, env), then per model; sorted by name. */
std::vector<SummaryRow> summarize(const std::vector<EpisodeResult>& episodes);
std::string summary_csv(const std::vector<SummaryRow>& rows);
std::string summary_markdown(const std::vector<SummaryRow>& rows);
/** Mean and SE per environment and model as grouped bars. */
std::string summary_svg(const std::vector<SummaryRow>& rows);

}  // namespace turnrl::tools
