#include "tools/eval_summary.h"

#include <cmath>
#include <cstdio>
#include <set>
#include <tuple>

#include "trainer/run/svg_chart.h"

namespace turnrl::tools {
namespace {

using Episodes = std::vector<const EpisodeResult*>;

/** BALROG's mean and SE of the episodes' progression, with their tokens. */
SummaryRow row_of(const std::string& model, const std::string& env, const std::string& task, const Episodes& episodes) {
  SummaryRow row{model, env, task, episodes.size()};
  for (const EpisodeResult* e : episodes) {
    row.prompt_tokens += e->prompt_tokens;
    row.completion_tokens += e->completion_tokens;
  }
  if (episodes.empty()) return row;
  double sum = 0.0;
  for (const EpisodeResult* e : episodes) sum += 100.0 * e->progression;
  row.mean = sum / episodes.size();
  double squares = 0.0;
  for (const EpisodeResult* e : episodes) squares += (100.0 * e->progression - row.mean) * (100.0 * e->progression - row.mean);
  row.standard_error = std::sqrt(squares / episodes.size()) / std::sqrt(static_cast<double>(episodes.size()));
  return row;
}

std::string fixed(double value, int digits) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%.*f", digits, value);
  return buffer;
}

std::string csv_field(const std::string& text) {
  if (text.find_first_of(",\"\n") == std::string::npos) return text;
  std::string out = "\"";
  for (char c : text) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

/** Tokens and cost per model, where any episode reported tokens. */
std::string usage_markdown(const std::vector<SummaryRow>& rows) {
  std::string out;
  for (const auto& r : rows) {
    if (r.env != "all" || r.prompt_tokens + r.completion_tokens == 0) continue;
    if (out.empty()) out = "\n| model | episodes | prompt tokens | completion tokens | cost (USD) |\n|---|---|---|---|---|\n";
    out += "| " + r.model + " | " + std::to_string(r.episodes) + " | " + std::to_string(r.prompt_tokens) + " | " +
           std::to_string(r.completion_tokens) + " | " + (r.cost_usd ? fixed(*r.cost_usd, 4) : "") + " |\n";
  }
  return out;
}

/** The rows of BALROG's summary, with tokens. */
std::vector<SummaryRow> progression_rows(const std::vector<EpisodeResult>& episodes) {
  std::map<std::string, std::map<std::string, std::map<std::string, Episodes>>> grouped;
  for (const auto& e : episodes) grouped[e.model][e.env][e.task].push_back(&e);
  std::vector<SummaryRow> rows;
  for (const auto& [model, envs] : grouped) {
    double mean_sum = 0.0, se_squares = 0.0;
    Episodes model_episodes;
    for (const auto& [env, tasks] : envs) {
      Episodes all;
      for (const auto& [task, values] : tasks) {
        rows.push_back(row_of(model, env, task, values));
        all.insert(all.end(), values.begin(), values.end());
      }
      const SummaryRow env_row = row_of(model, env, "all", all);
      rows.push_back(env_row);
      mean_sum += env_row.mean;
      se_squares += env_row.standard_error * env_row.standard_error;
      model_episodes.insert(model_episodes.end(), all.begin(), all.end());
    }
    SummaryRow overall = row_of(model, "all", "all", model_episodes);  // its tokens; BALROG's mean and SE:
    const double n_envs = static_cast<double>(envs.size());
    overall.mean = mean_sum / n_envs;
    overall.standard_error = std::sqrt(se_squares) / n_envs;
    rows.push_back(overall);
  }
  return rows;
}

/** Each row's spread over the repeats: the rows of every repeat's episodes alone, compared. */
void add_repeat_spread(const std::vector<EpisodeResult>& episodes, std::vector<SummaryRow>& rows) {
  std::map<int, std::vector<EpisodeResult>> by_repeat;
  for (const auto& e : episodes) by_repeat[e.repeat].push_back(e);
  if (by_repeat.size() < 2) return;
  std::map<std::tuple<std::string, std::string, std::string>, std::vector<double>> means;
  for (const auto& [repeat, subset] : by_repeat) {
    for (const SummaryRow& row : progression_rows(subset)) means[{row.model, row.env, row.task}].push_back(row.mean);
  }
  for (SummaryRow& row : rows) {
    const std::vector<double>& values = means[{row.model, row.env, row.task}];
    row.repeats = values.size();
    if (values.size() < 2) continue;
    double mean = 0.0, squares = 0.0;
    for (double v : values) mean += v / values.size();
    for (double v : values) squares += (v - mean) * (v - mean);
    row.repeat_std = std::sqrt(squares / (values.size() - 1));
  }
}

}  // namespace

std::vector<SummaryRow> summarize(const std::vector<EpisodeResult>& episodes, const ModelPrices& prices) {
  std::vector<SummaryRow> rows = progression_rows(episodes);
  add_repeat_spread(episodes, rows);
  for (SummaryRow& row : rows) {
    const auto price = prices.find(row.model);
    if (price != prices.end() && price->second.given()) row.cost_usd = price->second.cost(row.prompt_tokens, row.completion_tokens);
  }
  return rows;
}

std::string summary_csv(const std::vector<SummaryRow>& rows) {
  std::string out =
      "model,env,task,episodes,progression_mean,standard_error,repeats,repeat_std,prompt_tokens,completion_tokens,cost_usd\n";
  for (const auto& r : rows) {
    out += csv_field(r.model) + "," + csv_field(r.env) + "," + csv_field(r.task) + "," + std::to_string(r.episodes) + "," +
           fixed(r.mean, 4) + "," + fixed(r.standard_error, 4) + "," + std::to_string(r.repeats) + "," + fixed(r.repeat_std, 4) + "," +
           std::to_string(r.prompt_tokens) + "," +
           std::to_string(r.completion_tokens) + "," + (r.cost_usd ? fixed(*r.cost_usd, 6) : "") + "\n";
  }
  return out;
}

std::string summary_markdown(const std::vector<SummaryRow>& rows) {
  bool repeated = false;
  for (const auto& r : rows) repeated |= r.repeats > 1;
  std::string out = "| model | env | task | episodes | progression % (mean ± SE) |";
  out += repeated ? " std of the repeats' means |\n|---|---|---|---|---|---|\n" : "\n|---|---|---|---|---|\n";
  for (const auto& r : rows) {
    out += "| " + r.model + " | " + r.env + " | " + r.task + " | " + std::to_string(r.episodes) + " | " + fixed(r.mean, 1) +
           " ± " + fixed(r.standard_error, 1) + " |";
    if (repeated) {
      out += ' ';  // apart: GCC 12 misreads " " + string as an overlapping copy (-Wrestrict)
      out += fixed(r.repeat_std, 1) + " (" + std::to_string(r.repeats) + " repeats) |";
    }
    out += '\n';
  }
  return out + usage_markdown(rows);
}

std::string summary_svg(const std::vector<SummaryRow>& rows) {
  std::vector<std::string> models;
  std::set<std::string> env_names;
  for (const auto& r : rows) {
    if (r.env == "all") models.push_back(r.model);
    else if (r.task == "all") env_names.insert(r.env);
  }
  std::vector<trainer::BarGroup> groups;
  for (const auto& env : env_names) {
    trainer::BarGroup group{env, {}, {}};
    for (const auto& model : models) {
      double value = 0.0, error = 0.0;
      for (const auto& r : rows) {
        if (r.model == model && r.env == env && r.task == "all") value = r.mean, error = r.standard_error;
      }
      group.values.push_back(value);
      group.errors.push_back(error);
    }
    groups.push_back(std::move(group));
  }
  trainer::BarGroup overall{"overall", {}, {}};
  for (const auto& model : models) {
    for (const auto& r : rows) {
      if (r.model == model && r.env == "all") overall.values.push_back(r.mean), overall.errors.push_back(r.standard_error);
    }
  }
  groups.push_back(std::move(overall));
  return trainer::svg_bar_chart("BALROG progression (mean ± SE)", "progression %", 100.0, models, groups);
}

}  // namespace turnrl::tools
