#include "trainer/eval/evaluation.h"

#include <algorithm>
#include <cmath>
#include <span>
#include <stdexcept>

#include <spdlog/fmt/fmt.h>

#include "envs/registry.h"

namespace turnrl::trainer {

std::vector<TaskScore> evaluate(const EvaluationSpec& spec, agents::Agent& agent,
                                const std::function<void(const EpisodeLog&)>& on_episode) {
  std::vector<TaskScore> scores(spec.tasks.size());
  std::vector<EpisodeJob> jobs;
  for (size_t k = 0; k < spec.tasks.size(); ++k) {
    scores[k].task = spec.tasks[k];
    scores[k].episode_progression.assign(static_cast<size_t>(std::max(0, spec.episodes)), 0.0);
    for (const std::string& name : envs::make_env(spec.tasks[k], spec.env_options)->achievement_names()) scores[k].unlock_rates[name] = 0.0;
    for (int i = 0; i < spec.episodes; ++i) jobs.push_back({spec.tasks[k], spec.first_seed + static_cast<uint64_t>(i), k});
  }
  if (jobs.empty()) return scores;
  EpisodeRunnerConfig runner;
  runner.parallel_episodes = static_cast<int>(jobs.size());
  runner.batch_size = (jobs.size() + 1) / 2;  // one batch generates while the other's episodes step
  runner.turn = spec.turn;
  runner.progress_s = spec.progress_s;
  runner.progress_label = "evaluation";
  run_episodes(
      jobs, [&](const std::string& id) { return envs::make_env(id, spec.env_options); }, agent, runner,
      [&](EpisodeLog&& log) {
        TaskScore& score = scores[log.job.key];
        ++score.episodes;
        score.success += log.progression >= 1.0 ? 1.0 : 0.0;
        score.progression += log.progression;
        score.episode_progression.at(log.job.seed - spec.first_seed) = log.progression;
        score.mean_return += log.episode_return;
        score.mean_length += static_cast<double>(log.turns.size());
        for (const std::string& name : log.achievements) score.unlock_rates[name] += 1.0;
        if (on_episode) on_episode(log);
      });
  for (TaskScore& score : scores) {
    const double n = std::max(1, score.episodes);
    score.success /= n;
    score.progression /= n;
    score.mean_return /= n;
    score.mean_length /= n;
    for (auto& [name, rate] : score.unlock_rates) rate /= n;
    score.crafter_score = crafter_score(score.unlock_rates);
  }
  return scores;
}

double crafter_score(const std::map<std::string, double>& unlock_rates) {
  if (unlock_rates.empty()) return 0.0;
  double log_sum = 0.0;
  for (const auto& [name, rate] : unlock_rates) log_sum += std::log1p(100.0 * rate);
  return std::exp(log_sum / static_cast<double>(unlock_rates.size())) - 1.0;
}

std::string unlock_summary(const TaskScore& score) {
  std::vector<std::pair<std::string, double>> unlocked;
  for (const auto& entry : score.unlock_rates)
    if (entry.second > 0) unlocked.push_back(entry);
  std::stable_sort(unlocked.begin(), unlocked.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
  std::string text;
  for (const auto& [name, rate] : unlocked) text += (text.empty() ? "" : ", ") + name + " " + fmt::format("{:.2f}", rate);
  return text.empty() ? "none unlocked" : text;
}

namespace {

/** The standard error of the mean over tasks of their mean progression, clustered by seed offset:
 *  sqrt(G / (G - 1) * sum_i (sum_t (x_ti - m_t))^2) / (T G) for T tasks of G episodes each (for
 *  one task, the sample spread / sqrt(G)). */
double progression_se(std::span<const TaskScore> scores) {
  if (scores.empty()) return 0.0;
  const size_t seeds = scores.front().episode_progression.size();
  if (seeds < 2) return 0.0;
  double squares = 0;
  for (size_t i = 0; i < seeds; ++i) {
    double deviation = 0;
    for (const TaskScore& score : scores) {
      if (score.episode_progression.size() != seeds) throw std::invalid_argument("tasks scored on different numbers of seeds");
      deviation += score.episode_progression[i] - score.progression;
    }
    squares += deviation * deviation;
  }
  const double g = static_cast<double>(seeds);
  return std::sqrt(g / (g - 1) * squares) / (static_cast<double>(scores.size()) * g);
}

}  // namespace

nlohmann::json scores_json(const std::vector<TaskScore>& scores) {
  nlohmann::json tasks = nlohmann::json::object();
  double success = 0, progression = 0;
  int episodes = 0;
  for (const TaskScore& score : scores) {
    tasks[score.task] = {{"episodes", score.episodes}, {"success", score.success}, {"progression", score.progression},
                         {"progression_se", progression_se({&score, 1})}};
    if (!score.unlock_rates.empty()) {
      tasks[score.task]["unlock_rates"] = score.unlock_rates;
      tasks[score.task]["crafter_score"] = score.crafter_score;
    }
    success += score.success / scores.size();
    progression += score.progression / scores.size();
    episodes += score.episodes;
  }
  return {{"tasks", tasks},
          {"overall", {{"episodes", episodes}, {"success", success}, {"progression", progression}, {"progression_se", progression_se(scores)}}}};
}

}  // namespace turnrl::trainer
