#include "tools/eval_summary.h"

#include <cmath>
#include <cstdio>
#include <set>

#include "trainer/run/svg_chart.h"

namespace turnrl::tools {
namespace {

SummaryRow mean_and_se(const std::string& model, const std::string& env, const std::string& task,
                       const std::vector<double>& values) {
  SummaryRow row{model, env, task, values.size(), 0.0, 0.0};
  if (values.empty()) return row;
  double sum = 0.0;
  for (double v : values) sum += 100.0 * v;
  row.mean = sum / values.size();
  double squares = 0.0;
  for (double v : values) squares += (100.0 * v - row.mean) * (100.0 * v - row.mean);
  row.standard_error = std::sqrt(squares / values.size()) / std::sqrt(static_cast<double>(values.size()));
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

}  // namespace

std::vector<SummaryRow> summarize(const std::vector<EpisodeResult>& episodes) {
  std::map<std::string, std::map<std::string, std::map<std::string, std::vector<double>>>> grouped;
  for (const auto& e : episodes) grouped[e.model][e.env][e.task].push_back(e.progression);
  std::vector<SummaryRow> rows;
  for (const auto& [model, envs] : grouped) {
    double mean_sum = 0.0, se_squares = 0.0;
    size_t model_episodes = 0;
    for (const auto& [env, tasks] : envs) {
      std::vector<double> all;
      for (const auto& [task, values] : tasks) {
        rows.push_back(mean_and_se(model, env, task, values));
        all.insert(all.end(), values.begin(), values.end());
      }
      const SummaryRow env_row = mean_and_se(model, env, "all", all);
      rows.push_back(env_row);
      mean_sum += env_row.mean;
      se_squares += env_row.standard_error * env_row.standard_error;
      model_episodes += all.size();
    }
    const double n_envs = static_cast<double>(envs.size());
    rows.push_back({model, "all", "all", model_episodes, mean_sum / n_envs, std::sqrt(se_squares) / n_envs});
  }
  return rows;
}

std::string summary_csv(const std::vector<SummaryRow>& rows) {
  std::string out = "model,env,task,episodes,progression_mean,standard_error\n";
  for (const auto& r : rows) {
    out += csv_field(r.model) + "," + csv_field(r.env) + "," + csv_field(r.task) + "," + std::to_string(r.episodes) + "," +
           fixed(r.mean, 4) + "," + fixed(r.standard_error, 4) + "\n";
  }
  return out;
}

std::string summary_markdown(const std::vector<SummaryRow>& rows) {
  std::string out = "| model | env | task | episodes | progression % (mean ± SE) |\n|---|---|---|---|---|\n";
  for (const auto& r : rows) {
    out += "| " + r.model + " | " + r.env + " | " + r.task + " | " + std::to_string(r.episodes) + " | " + fixed(r.mean, 1) +
           " ± " + fixed(r.standard_error, 1) + " |\n";
  }
  return out;
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
