#include "trainer/rollout/evaluation.h"

#include "envs/registry.h"

namespace turnrl::trainer {

std::vector<TaskScore> evaluate(const EvaluationSpec& spec, agents::Agent& agent,
                                const std::function<void(const EpisodeLog&)>& on_episode) {
  std::vector<TaskScore> scores(spec.tasks.size());
  std::vector<EpisodeJob> jobs;
  for (size_t k = 0; k < spec.tasks.size(); ++k) {
    scores[k].task = spec.tasks[k];
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
        score.mean_return += log.episode_return;
        score.mean_length += static_cast<double>(log.turns.size());
        if (on_episode) on_episode(log);
      });
  for (TaskScore& score : scores) {
    const double n = std::max(1, score.episodes);
    score.success /= n;
    score.progression /= n;
    score.mean_return /= n;
    score.mean_length /= n;
  }
  return scores;
}

nlohmann::json scores_json(const std::vector<TaskScore>& scores) {
  nlohmann::json tasks = nlohmann::json::object();
  double success = 0, progression = 0;
  int episodes = 0;
  for (const TaskScore& score : scores) {
    tasks[score.task] = {{"episodes", score.episodes}, {"success", score.success}, {"progression", score.progression}};
    success += score.success / scores.size();
    progression += score.progression / scores.size();
    episodes += score.episodes;
  }
  return {{"tasks", tasks}, {"overall", {{"episodes", episodes}, {"success", success}, {"progression", progression}}}};
}

}  // namespace turnrl::trainer
