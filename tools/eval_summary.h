#pragma once
// BALROG's progression summary (balrog.md 1.3): per task and per environment, mean x100 and
// SE = population std / sqrt(n); per model, the unweighted mean of env means with
// SE = sqrt(sum SE_env^2) / n_envs. Beside it, the tokens the episodes cost (the servers' `usage`
// or the local model's count) and, where a model has prices, their cost in USD. Where the sweep
// played repeats (K seeds per episode slot), each row also gives the spread of the repeats' own
// means: their sample standard deviation.
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace turnrl::tools {

struct EpisodeResult {
  std::string model, env, task;
  double progression = 0.0;  // in [0, 1]
  size_t prompt_tokens = 0, completion_tokens = 0;
  int repeat = 0;  // which of the sweep's repeats of the episode slot
  size_t steps = 0;
};

/** A model's prices in USD per million tokens; 0 and 0: none (no cost in the summary). */
struct TokenPrices {
  double prompt = 0.0, completion = 0.0;
  bool given() const { return prompt > 0 || completion > 0; }
  double cost(size_t prompt_tokens, size_t completion_tokens) const {
    return (static_cast<double>(prompt_tokens) * prompt + static_cast<double>(completion_tokens) * completion) / 1e6;
  }
};
using ModelPrices = std::map<std::string, TokenPrices>;  // by model name

struct SummaryRow {
  std::string model, env, task;  // env "all": the model's overall; task "all": the env's row
  size_t episodes = 0;
  double mean = 0.0, standard_error = 0.0;  // percent
  size_t repeats = 1;       // repeats the row's episodes span
  double repeat_std = 0.0;  // percent: sample std of the repeats' means (as `mean` is computed); 0 for one repeat
  size_t prompt_tokens = 0, completion_tokens = 0;  // summed over the row's episodes
  std::optional<double> cost_usd = std::nullopt;    // where the model has prices
};

/** Rows per (model, env, task), then per (model, env), then per model; sorted by name. */
std::vector<SummaryRow> summarize(const std::vector<EpisodeResult>& episodes, const ModelPrices& prices = {});
std::string summary_csv(const std::vector<SummaryRow>& rows);
/** The progression table, then (where any episode reported tokens) tokens and cost per model. */
std::string summary_markdown(const std::vector<SummaryRow>& rows);
/** Mean and SE per environment and model as grouped bars. */
std::string summary_svg(const std::vector<SummaryRow>& rows);

}  // namespace turnrl::tools
