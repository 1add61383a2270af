#include "trainer/algo/advantages.h"

#include <cmath>
#include <map>
#include <numeric>
#include <stdexcept>

#include "trainer/rewards/group_stats.h"

namespace turnrl::trainer {

std::vector<TurnTargets> dual_discount_gae(const std::vector<TurnSignals>& turns, std::optional<float> bootstrap,
                                           const GaeParams& params) {
  std::vector<TurnTargets> out(turns.size());
  double gae = 0.0;
  double next_value = bootstrap.value_or(0.0f);
  for (size_t t = turns.size(); t-- > 0;) {
    const TurnSignals& turn = turns[t];
    if (turn.values.size() != turn.rewards.size() || turn.values.empty()) {
      throw std::invalid_argument("dual_discount_gae: a turn needs as many values as rewards (L + 1 >= 1)");
    }
    double gamma = params.step_gamma, lambda = params.step_lambda;
    double not_done = turn.done ? 0.0 : 1.0;
    gae *= not_done;  // the chain never crosses an episode end
    TurnTargets& target = out[t];
    const size_t positions = turn.values.size();
    target.advantages.resize(positions);
    target.returns.resize(positions);
    for (size_t k = positions; k-- > 0;) {
      const double delta = turn.rewards[k] + gamma * next_value * not_done - turn.values[k];
      gae = delta + gamma * lambda * gae;
      target.advantages[k] = static_cast<float>(gae);
      target.returns[k] = static_cast<float>(gae + turn.values[k]);
      next_value = turn.values[k];
      not_done = 1.0;
      gamma = params.token_gamma;
      lambda = params.token_lambda;
    }
  }
  return out;
}

namespace {

/** (x - mean) / (std + eps) in place, with the group's mean and unbiased std (over every rank's
 *  entries when `ranks` is set); nothing changes unless the entries number at least `min_count`. */
void normalise(const std::vector<float*>& entries, double eps, size_t min_count = 0, RankSum* ranks = nullptr) {
  std::vector<double> values;
  values.reserve(entries.size());
  for (const float* x : entries) values.push_back(*x);
  const rewards::MeanStd stats = rewards::mean_std(values, ranks);
  if (stats.count < min_count) return;
  for (float* x : entries) *x = static_cast<float>((*x - stats.mean) / (stats.std + eps));
}

}  // namespace

void whiten(std::vector<float*>& entries, RankSum* ranks) { normalise(entries, 1e-8, 2, ranks); }

namespace {

std::vector<float*> all_entries(TokenRewards& values) {
  std::vector<float*> entries;
  for (auto& row : values) {
    for (float& x : row) entries.push_back(&x);
  }
  return entries;
}

void reverse_cumsum(TokenRewards& values) {
  for (auto& row : values) {
    for (size_t k = row.size(); k-- > 1;) row[k - 1] += row[k];
  }
}

}  // namespace

TokenRewards reinforce_plus_plus(const TokenRewards& rewards, double gamma, RankSum* ranks) {
  TokenRewards out = rewards;
  for (auto& row : out) {
    for (size_t k = row.size(); k-- > 1;) row[k - 1] = static_cast<float>(row[k - 1] + gamma * row[k]);
  }
  auto entries = all_entries(out);
  whiten(entries, ranks);
  return out;
}

TokenRewards grpo(const TokenRewards& rewards) {
  std::vector<double> totals;
  for (const auto& row : rewards) totals.push_back(std::accumulate(row.begin(), row.end(), 0.0));
  const rewards::MeanStd stats = rewards::mean_std(totals);
  TokenRewards out = rewards;
  for (size_t i = 0; i < out.size(); ++i) {
    for (float& x : out[i]) x = static_cast<float>((totals[i] - stats.mean) / (stats.std + 1e-6));
  }
  return out;
}

TokenRewards token_grpo(const TokenRewards& rewards) {
  TokenRewards out = rewards;
  normalise(all_entries(out), 1e-6);
  reverse_cumsum(out);
  return out;
}

TokenRewards rloo(const TokenRewards& rewards) {
  const size_t n = rewards.size();
  if (n < 2) throw std::invalid_argument("rloo needs at least two samples per group");
  std::vector<double> sample_means;
  for (const auto& row : rewards) sample_means.push_back(row.empty() ? 0.0 : std::accumulate(row.begin(), row.end(), 0.0) / row.size());
  const double total = std::accumulate(sample_means.begin(), sample_means.end(), 0.0);
  TokenRewards out = rewards;
  for (size_t i = 0; i < n; ++i) {
    const double baseline = (total - sample_means[i]) / (n - 1);
    for (float& x : out[i]) x = static_cast<float>(x - baseline);
  }
  reverse_cumsum(out);
  return out;
}

Estimator parse_estimator(const std::string& name) {
  const std::optional<Estimator> estimator = parse_enum<Estimator>(name);
  if (!estimator) throw std::invalid_argument("unknown advantage estimator '" + name + "'");
  return *estimator;
}

bool uses_groups(Estimator estimator) {
  return estimator == Estimator::kGrpo || estimator == Estimator::kTokenGrpo || estimator == Estimator::kRloo ||
         estimator == Estimator::kGigpo;
}

namespace {

/** One estimator over one reward stream. */
TokenRewards stream_advantages(Estimator estimator, const TokenRewards& samples, const std::vector<uint64_t>& group_keys,
                               double gamma, RankSum* ranks) {
  if (estimator == Estimator::kGae) throw std::invalid_argument("sample_advantages: GAE needs the critic (dual_discount_gae)");
  if (estimator == Estimator::kGigpo) throw std::invalid_argument("sample_advantages: GiGPO needs anchor states (rewards::gigpo_advantages)");
  if (estimator == Estimator::kReinforcePlusPlus) return reinforce_plus_plus(samples, gamma, ranks);
  std::map<uint64_t, std::vector<size_t>> groups;
  for (size_t i = 0; i < samples.size(); ++i) groups[group_keys[i]].push_back(i);
  TokenRewards out(samples.size());
  for (const auto& [key, members] : groups) {
    if (members.size() < 2) {
      out[members[0]].assign(samples[members[0]].size(), 0.0f);
      continue;
    }
    TokenRewards group;
    for (size_t i : members) group.push_back(samples[i]);
    const TokenRewards advantages = estimator == Estimator::kGrpo        ? grpo(group)
                                    : estimator == Estimator::kTokenGrpo ? token_grpo(group)
                                                                         : rloo(group);
    for (size_t j = 0; j < members.size(); ++j) out[members[j]] = advantages[j];
  }
  return out;
}

bool any_nonzero(const TokenRewards& values) {
  for (const auto& row : values) {
    for (float x : row) {
      if (x != 0.0f) return true;
    }
  }
  return false;
}

}  // namespace

TokenRewards sample_advantages(Estimator estimator, const SampleRewards& rewards, const std::vector<uint64_t>& group_keys,
                               double gamma, RankSum* ranks) {
  const size_t n = rewards.outcome.size();
  if (rewards.process.size() != n || rewards.penalty.size() != n || group_keys.size() != n) {
    throw std::invalid_argument("sample_advantages: every stream and the group keys need one entry per sample");
  }
  for (size_t i = 0; i < n; ++i) {
    if (rewards.process[i].size() != rewards.outcome[i].size() || rewards.penalty[i].size() != rewards.outcome[i].size()) {
      throw std::invalid_argument("sample_advantages: sample " + std::to_string(i) + " has streams of different lengths");
    }
  }
  // A group lives on one rank (its slots share a seed no other rank plays), so only REINFORCE++'s
  // whitening over all samples, and which streams it whitens, involve the other ranks.
  if (estimator != Estimator::kReinforcePlusPlus) ranks = nullptr;
  std::vector<double> streams = {any_nonzero(rewards.outcome) ? 1.0 : 0.0, any_nonzero(rewards.process) ? 1.0 : 0.0};
  if (ranks) ranks->sum(streams);
  const bool outcome = streams[0] > 0, process = streams[1] > 0;
  TokenRewards out;
  if (outcome && process) {
    out = stream_advantages(estimator, rewards.outcome, group_keys, gamma, ranks);
    const TokenRewards second = stream_advantages(estimator, rewards.process, group_keys, gamma, ranks);
    for (size_t i = 0; i < n; ++i) {
      for (size_t k = 0; k < out[i].size(); ++k) out[i][k] += second[i][k];
    }
  } else {
    out = stream_advantages(estimator, process ? rewards.process : rewards.outcome, group_keys, gamma, ranks);
  }
  add_penalty_to_go(out, rewards.penalty, gamma);
  return out;
}

void add_penalty_to_go(TokenRewards& advantages, const TokenRewards& penalty, double gamma) {
  for (size_t i = 0; i < advantages.size(); ++i) {
    double to_go = 0.0;
    for (size_t k = advantages[i].size(); k-- > 0;) {
      to_go = penalty[i][k] + gamma * to_go;
      advantages[i][k] += static_cast<float>(to_go);
    }
  }
}

}  // namespace turnrl::trainer
