#include "trainer/run/collector.h"

#include <chrono>
#include <cmath>

#include "trainer/dist/distributed.h"
#include "trainer/rollout/episode_restart.h"

namespace turnrl::trainer {
namespace {

/** Runs `work`, adding its seconds to `total`. */
template <typename Work>
auto timed(double& total, Work&& work) {
  const auto begin = std::chrono::steady_clock::now();
  auto result = work();
  total += std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
  return result;
}

}  // namespace

void RewardTotals::add(const StageRewards& rewards) {
  wait_seconds += rewards.wait_seconds;
  scorer_seconds += rewards.scorer_seconds;
  process_seconds += rewards.process_seconds;
  for (const auto& row : rewards.process) {
    for (float u : row) {
      process_abs_sum += std::abs(u);
      process_count += u != 0.0f;
    }
  }
}

nlohmann::json RewardTotals::metrics(const TrainConfig& c) const {
  nlohmann::json m = nlohmann::json::object();
  if (c.reward.scorer.url.empty() && !c.reward.process) return m;
  m["reward_wait_s"] = wait_seconds;
  if (!c.reward.scorer.url.empty()) m["scorer_s"] = scorer_seconds;
  if (c.reward.process) {
    m["process_s"] = process_seconds;
    m["process_abs_mean"] = process_count ? process_abs_sum / process_count : 0.0;
  }
  return m;
}

ScoredCollection Collector::collect_scored(Collection& into) {
  ScoredCollection scored;
  scored.batch = timed(into.times.collect, [&] { return rollout_.collect(); });
  into.times.generate += scored.batch.agent_seconds;
  into.times.env += scored.batch.env_seconds;
  into.times.prompt += scored.batch.prompt_seconds;
  log_restarts(scored.batch.restarts);
  into.restarts.insert(into.restarts.end(), scored.batch.restarts.begin(), scored.batch.restarts.end());
  scored.rewards = timed(into.times.scoring, [&] { return assign_token_rewards(*learner_.reward_manager, scored.batch, &streams_); });
  into.rewards.add(scored.rewards);
  scored.targets = timed(into.times.scoring, [&] { return compute_targets(learner_, scored.batch, scored.rewards); });
  return scored;
}

Collection Collector::collect() {
  Collection out;
  const TrainConfig& c = learner_.config;
  if (c.reward.dynamic_sampling_tries <= 0) {
    ScoredCollection scored = collect_scored(out);
    out.batch = std::move(scored.batch);
    out.targets = std::move(scored.targets);
    out.finished_episodes = out.batch.finished_episodes;
    return out;
  }
  // Each rank fills its own share of the batch: the group estimators need no other rank.
  SignalBatch kept = sample_batch_with_signal(c, [&] { return collect_scored(out); }, c.reward.dynamic_sampling_tries);
  out.batch = std::move(kept.turns);
  out.targets = std::move(kept.targets);
  out.finished_episodes = std::move(kept.finished_episodes);
  RankTotals groups;
  groups.add("wanted", static_cast<double>(kept.groups_wanted));
  groups.add("kept", static_cast<double>(kept.groups_kept));
  groups.add("dropped", static_cast<double>(kept.groups_dropped));
  std::vector<double> tries = {static_cast<double>(kept.tries)};
  ProcessGroup* ranks = learner_.ranks.get();
  groups.sum_over(ranks);
  if (ranks) ranks->max(tries);
  out.sampling = {{"groups_wanted", static_cast<size_t>(groups["wanted"])}, {"groups_kept", static_cast<size_t>(groups["kept"])},
                  {"groups_dropped", static_cast<size_t>(groups["dropped"])}, {"sampling_tries", static_cast<int>(tries[0])}};
  return out;
}

}  // namespace turnrl::trainer
