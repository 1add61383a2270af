#include "trainer/rewards/gigpo.h"

#include <map>
#include <numeric>
#include <stdexcept>
#include <utility>

#include "trainer/rewards/group_stats.h"

namespace turnrl::trainer::rewards {
namespace {

/** Group-relative scores: (x - mean) / F per member; 0 for every member of a group of one. */
std::vector<double> relative_scores(const std::vector<double>& values, const GigpoParams& params) {
  if (values.size() < 2) return std::vector<double>(values.size(), 0.0);
  const MeanStd stats = mean_std(values);
  const double scale = params.normalisation == GigpoNormalisation::kMeanStd ? stats.std + params.epsilon : 1.0;
  std::vector<double> scores;
  for (double x : values) scores.push_back((x - stats.mean) / scale);
  return scores;
}

}  // namespace

std::vector<double> discounted_returns(const std::vector<double>& rewards, double gamma) {
  std::vector<double> returns(rewards.size());
  double running = 0.0;
  for (size_t t = rewards.size(); t-- > 0;) {
    running = rewards[t] + gamma * running;
    returns[t] = running;
  }
  return returns;
}

std::vector<std::vector<GigpoAdvantage>> gigpo_advantages(const std::vector<GigpoEpisode>& episodes,
                                                          const GigpoParams& params) {
  std::vector<std::vector<GigpoAdvantage>> out(episodes.size());
  std::map<uint64_t, std::vector<size_t>> episode_groups;
  // (group, state) -> the (episode, step) pairs taken from that state.
  std::map<std::pair<uint64_t, std::string>, std::vector<std::pair<size_t, size_t>>> step_groups;
  std::vector<std::vector<double>> step_returns(episodes.size());
  for (size_t e = 0; e < episodes.size(); ++e) {
    const GigpoEpisode& episode = episodes[e];
    if (episode.rewards.size() != episode.states.size()) {
      throw std::invalid_argument("gigpo: episode " + std::to_string(e) + " has " + std::to_string(episode.rewards.size()) +
                                  " rewards and " + std::to_string(episode.states.size()) + " states");
    }
    out[e].resize(episode.rewards.size());
    episode_groups[episode.group_key].push_back(e);
    step_returns[e] = discounted_returns(episode.rewards, params.gamma);
    for (size_t t = 0; t < episode.states.size(); ++t) step_groups[{episode.group_key, episode.states[t]}].push_back({e, t});
  }
  for (const auto& [key, members] : episode_groups) {
    std::vector<double> returns;
    for (size_t e : members) returns.push_back(std::accumulate(episodes[e].rewards.begin(), episodes[e].rewards.end(), 0.0));
    const std::vector<double> scores = relative_scores(returns, params);
    for (size_t i = 0; i < members.size(); ++i) {
      for (GigpoAdvantage& advantage : out[members[i]]) advantage.episode = scores[i];
    }
  }
  for (const auto& [key, members] : step_groups) {
    std::vector<double> returns;
    for (const auto& [e, t] : members) returns.push_back(step_returns[e][t]);
    const std::vector<double> scores = relative_scores(returns, params);
    for (size_t i = 0; i < members.size(); ++i) out[members[i].first][members[i].second].step = scores[i];
  }
  for (auto& steps : out) {
    for (GigpoAdvantage& advantage : steps) advantage.combined = advantage.episode + params.step_weight * advantage.step;
  }
  return out;
}

}  // namespace turnrl::trainer::rewards
