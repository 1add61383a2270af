#include "trainer/run/iteration_metrics.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <string>

#include "trainer/dist/distributed.h"
#include "trainer/rollout/episode_restart.h"

namespace turnrl::trainer {
namespace {

std::string task_key(size_t task, const char* what) { return "task" + std::to_string(task) + "_" + what; }

/** This rank's figures of the batch, as totals the ranks add up. */
RankTotals batch_totals(const TrainConfig& c, const Collection& collection) {
  double progression = 0, reward = 0;
  // Per task of a mix: episodes finished and their progression summed (the training batch's own
  // signal: a task whose sampled episodes never progress gives the learner nothing to follow).
  std::vector<double> task_episodes(c.env.ids.size(), 0.0), task_progression(c.env.ids.size(), 0.0);
  for (const auto& e : collection.finished_episodes) {
    progression += e.progression;
    reward += e.episode_return;
    const size_t task = c.env.task_of_slot(e.slot);
    task_episodes[task] += 1.0;
    task_progression[task] += e.progression;
  }
  double invalid = 0, response_tokens = 0;
  for (const auto& t : collection.batch.turns) {
    invalid += !t.valid_action;
    response_tokens += static_cast<double>(t.response_ids.size());
  }
  const TrainingTargets& targets = collection.targets;
  const double turns = static_cast<double>(collection.batch.turns.size());
  RankTotals totals;
  totals.add("turns", turns);
  totals.add("episodes", static_cast<double>(collection.finished_episodes.size()));
  totals.add("progression", progression);
  totals.add("reward", reward);
  totals.add("invalid", invalid);
  totals.add("kl_reasoning", targets.kl_reasoning * static_cast<double>(targets.reasoning_tokens));
  totals.add("reasoning_tokens", static_cast<double>(targets.reasoning_tokens));
  totals.add("kl_action", targets.kl_action * static_cast<double>(targets.action_tokens));
  totals.add("action_tokens", static_cast<double>(targets.action_tokens));
  totals.add("value", targets.mean_value * turns);
  totals.add("response_tokens", response_tokens);
  for (size_t task = 0; task < c.env.ids.size(); ++task) {
    totals.add(task_key(task, "episodes"), task_episodes[task]);
    totals.add(task_key(task, "progression"), task_progression[task]);
  }
  return totals;
}

/** Every rank's restarts, on rank 0. */
nlohmann::json gather_restarts(const std::vector<EpisodeRestart>& restarts, ProcessGroup* ranks) {
  if (!ranks) return restarts_json(restarts);
  nlohmann::json all = nlohmann::json::array();
  for (const std::string& rank : ranks->gather(restarts_json(restarts).dump())) {
    for (const auto& restart : nlohmann::json::parse(rank)) all.push_back(restart);
  }
  return all;
}

}  // namespace

nlohmann::json iteration_metrics(const TrainConfig& c, int iteration, const Collection& collection, nlohmann::json update,
                                 const IterationClock& clock, const TimeBudget& budget, ProcessGroup* ranks) {
  nlohmann::json& m = update;
  m.update(collection.sampling);
  m.update(collection.rewards.metrics(c));
  RankTotals totals = batch_totals(c, collection);
  totals.sum_over(ranks);
  const nlohmann::json restarts = gather_restarts(collection.restarts, ranks);
  const double seconds = clock.seconds();
  const double turns = totals["turns"], episodes = totals["episodes"];
  const double turns_trained = std::max(1.0, turns);
  const CollectTimes& times = collection.times;
  m["type"] = "train";
  m["iteration"] = iteration;
  m["minutes"] = budget.elapsed() / 60.0;
  m["turns"] = static_cast<size_t>(turns);
  m["turns_per_s"] = turns / seconds;  // turns trained on per second
  m["rollout_share"] = clock.rollout_seconds / seconds;
  m["seconds"] = {{"collect", times.collect}, {"generate", times.generate}, {"env", times.env}, {"prompt", times.prompt},
                  {"scoring", times.scoring}, {"update", clock.update_seconds}, {"total", seconds}};
  m["episodes"] = static_cast<size_t>(episodes);
  m["success"] = totals.ratio("progression", "episodes");
  m["episode_reward"] = totals.ratio("reward", "episodes");
  m["invalid_rate"] = totals["invalid"] / turns_trained;
  if (c.env.ids.size() > 1) {
    nlohmann::json& tasks = m["task_success"] = nlohmann::json::object();
    for (size_t task = 0; task < c.env.ids.size(); ++task) {
      tasks[c.env.ids[task]] = {{"episodes", totals[task_key(task, "episodes")]},
                                {"progression", totals.ratio(task_key(task, "progression"), task_key(task, "episodes"))}};
    }
  }
  m["reply_tokens"] = totals["response_tokens"] / turns_trained;  // end-of-turn token included
  // One process reports the targets' own means: a mean times its count, divided back, may round differently.
  const TrainingTargets& targets = collection.targets;
  m["kl_reasoning"] = ranks ? totals.ratio("kl_reasoning", "reasoning_tokens") : targets.kl_reasoning;
  m["kl_action"] = ranks ? totals.ratio("kl_action", "action_tokens") : targets.kl_action;
  m["mean_value"] = ranks ? totals["value"] / turns_trained : targets.mean_value;
  if (!restarts.empty()) m["restarts"] = restarts;
  return m;
}

void log_iteration(const TrainConfig& c, const nlohmann::json& m, double eta_seconds) {
  spdlog::info("iter {:4d}/{} | {:6.0f} turns/s | success {:.3f} ({} eps) | reward {:+.3f} | invalid {:.3f} | KL {:+.5f} | pi {:+.4f} | v {:.4f} | ent {:.3f} | ETA {:.1f} min",
               m["iteration"].get<int>(), c.run.iterations, m["turns_per_s"].get<double>(), m["success"].get<double>(),
               m["episodes"].get<size_t>(), m["episode_reward"].get<double>(), m["invalid_rate"].get<double>(), m["kl_action"].get<double>(),
               m.value("policy_loss", 0.0), m.value("value_loss", 0.0), m.value("entropy", 0.0), eta_seconds / 60.0);
}

}  // namespace turnrl::trainer
