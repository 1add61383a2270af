#pragma once
// GiGPO's two-level advantage (arXiv 2505.10978; rewards.md section 4), critic-free:
// - episode level: the episodes of one group (same task and seed) are compared by their returns,
//   A^E = (R - mean R) / F with R the sum of the episode's rewards;
// - step level: across the group's episodes, every step taken from the same anchor state (equal
//   Env::state_hash) joins one step group, and A^S = (R_t - mean R_t) / F over that group, with
//   R_t = sum_k gamma^k r_{t+k} the discounted return from the step to the episode's end.
// A = A^E + omega * A^S, the same for every token of the step's reply. F is the group's unbiased
// std plus epsilon, or 1 in the mean-norm variant. As in verl-agent's core_gigpo.py, a state an
// episode visits twice puts both visits, each with its own return, into the state's step group; a
// step group of one gives A^S = 0. An episode group of one gives A^E = 0 (no partner to compare
// with, as the project's other group estimators do; verl-agent would give it A^E = R).
#include <cstdint>
#include <string>
#include <vector>

namespace turnrl::trainer::rewards {

enum class GigpoNormalisation {
  kMeanStd,  // divide by the group's std (+ epsilon)
  kMean,     // "mean_norm": subtract the mean only
};

struct GigpoParams {
  double gamma = 0.95;        // discount of the step returns (verl-agent's default)
  double step_weight = 1.0;   // omega
  GigpoNormalisation normalisation = GigpoNormalisation::kMeanStd;
  double epsilon = 1e-6;
};

/** One complete episode: the env reward of each step and the anchor state each step acted in. */
struct GigpoEpisode {
  uint64_t group_key = 0;           // episodes with equal keys form one episode group
  std::vector<double> rewards;      // r_t
  std::vector<std::string> states;  // the state hash before step t's action
};

struct GigpoAdvantage {
  double episode = 0.0;   // A^E
  double step = 0.0;      // A^S
  double combined = 0.0;  // A^E + omega * A^S
};

/** One advantage per step of each episode. Throws std::invalid_argument when an episode has
 *  different numbers of rewards and states. */
std::vector<std::vector<GigpoAdvantage>> gigpo_advantages(const std::vector<GigpoEpisode>& episodes,
                                                          const GigpoParams& params);

/** R_t = sum_k gamma^k r_{t+k} for every t. */
std::vector<double> discounted_returns(const std::vector<double>& rewards, double gamma);

}  // namespace turnrl::trainer::rewards
