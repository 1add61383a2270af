#include "trainer/rewards/signal_batch.h"

#include <map>
#include <memory>

#include "trainer/rewards/dynamic_sampling.h"

namespace turnrl::trainer {
namespace {

/** The segments of one group (same start state) in one collection. */
struct Group {
  size_t collection = 0;
  std::vector<size_t> rows;
  std::vector<double> segment_rewards;  // one per segment: the sum of its token rewards
};

std::vector<Group> groups_of(const TrainConfig& config, const ScoredCollection& scored, size_t collection) {
  std::map<uint64_t, Group> by_key;
  for (const Segment& segment : episode_segments(config, scored.batch)) {
    Group& group = by_key[segment.group_key];
    group.collection = collection;
    double reward = 0.0;
    for (size_t i : segment.rows) {
      group.rows.push_back(i);
      for (float r : scored.rewards.manager[i]) reward += r;
    }
    group.segment_rewards.push_back(reward);
  }
  std::vector<Group> groups;
  for (auto& [key, group] : by_key) groups.push_back(std::move(group));
  return groups;
}

void append_row(TrainingTargets& to, const TrainingTargets& from, size_t i) {
  to.old_logprobs.push_back(from.old_logprobs[i]);
  to.old_values.push_back(from.old_values[i]);
  to.advantages.push_back(from.advantages[i]);
  to.returns.push_back(from.returns[i]);
}

}  // namespace

SignalBatch sample_batch_with_signal(const TrainConfig& config, const std::function<ScoredCollection()>& collect, int max_tries) {
  std::vector<std::unique_ptr<ScoredCollection>> collections;
  auto next_groups = [&] {
    collections.push_back(std::make_unique<ScoredCollection>(collect()));
    return groups_of(config, *collections.back(), collections.size() - 1);
  };
  // The first collection sets how many groups a batch holds.
  std::vector<Group> first = next_groups();
  const size_t groups_wanted = first.size();
  bool first_served = false;
  const auto sampled = rewards::sample_groups_with_signal<Group>(
      groups_wanted, max_tries,
      [&] {
        if (first_served) return next_groups();
        first_served = true;
        return std::move(first);
      },
      [](const Group& group) { return group.segment_rewards; });

  SignalBatch out;
  out.groups_wanted = groups_wanted;
  out.groups_kept = sampled.kept.size();
  out.groups_dropped = sampled.groups_dropped;
  out.tries = sampled.tries;
  double kl_reasoning = 0, kl_action = 0, mean_value = 0;
  for (const auto& scored : collections) {
    out.finished_episodes.insert(out.finished_episodes.end(), scored->batch.finished_episodes.begin(),
                                 scored->batch.finished_episodes.end());
    kl_reasoning += scored->targets.kl_reasoning / collections.size();
    kl_action += scored->targets.kl_action / collections.size();
    mean_value += scored->targets.mean_value / collections.size();
    out.targets.reasoning_tokens += scored->targets.reasoning_tokens;
    out.targets.action_tokens += scored->targets.action_tokens;
  }
  for (const Group& group : sampled.kept) {
    const ScoredCollection& scored = *collections[group.collection];
    for (size_t i : group.rows) {
      out.turns.turns.push_back(scored.batch.turns[i]);
      append_row(out.targets, scored.targets, i);
    }
  }
  out.turns.n_env = static_cast<int>(out.turns.turns.size());
  out.turns.e_len = 1;
  out.targets.kl_reasoning = kl_reasoning;
  out.targets.kl_action = kl_action;
  out.targets.mean_value = mean_value;
  return out;
}

}  // namespace turnrl::trainer
