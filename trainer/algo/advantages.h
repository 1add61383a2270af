#pragma once
// Advantage estimators over token-level rewards of multi-turn episodes (torch-free, so every
// table is checkable by hand). Positions of a turn with L response tokens are k = 0..L:
// the prompt end and the state after each generated token.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "trainer/config/enum_names.h"
#include "trainer/dist/rank_sum.h"

namespace turnrl::trainer {

struct TurnSignals {
  std::vector<float> values;   // L + 1 critic values
  std::vector<float> rewards;  // L + 1 token rewards (env reward at L - 1, KL terms at 0..L-1)
  bool done = false;           // the episode ended after this turn (no bootstrap across it)
};

struct TurnTargets {
  std::vector<float> advantages;  // L + 1
  std::vector<float> returns;     // L + 1 (advantage + value)
};

struct GaeParams {
  double step_gamma = 0.99, step_lambda = 0.95;    // across turns
  double token_gamma = 1.0, token_lambda = 1.0;    // within a turn
};

/**
 * Verlog's dual-discount GAE for one env slot's turns in time order. `bootstrap` is V(s_{T+1})
 * when the last episode was cut unfinished (ignored after a done turn).
 */
std::vector<TurnTargets> dual_discount_gae(const std::vector<TurnSignals>& turns, std::optional<float> bootstrap,
                                           const GaeParams& params);

/** Whitens in place: mean 0, unbiased std 1 (eps 1e-8) over all entries (of every rank with `ranks`). */
void whiten(std::vector<float*>& entries, RankSum* ranks = nullptr);

/** Token-level estimators over a group of sampled responses to one prompt (rewards per token). */
using TokenRewards = std::vector<std::vector<float>>;
/** REINFORCE++: discounted return per token, whitened over the group (of every rank with `ranks`). */
TokenRewards reinforce_plus_plus(const TokenRewards& rewards, double gamma, RankSum* ranks = nullptr);
/** GRPO: each sample's total reward normalised by the group mean/std, broadcast to its tokens. */
TokenRewards grpo(const TokenRewards& rewards);
/** Token-level GRPO: every token normalised by the group's pooled token mean/std, then reverse cumsum. */
TokenRewards token_grpo(const TokenRewards& rewards);
/** PRIME-style RLOO: per-sample token mean, leave-one-out baseline, then reverse cumulative sum. */
TokenRewards rloo(const TokenRewards& rewards);

/** The critic-free estimators a training config can select instead of GAE. */
enum class Estimator { kGae, kReinforcePlusPlus, kGrpo, kTokenGrpo, kRloo, kGigpo };
template <>
struct EnumNames<Estimator> {
  static const std::vector<std::string>& names() {
    static const std::vector<std::string> n = {"gae", "reinforce++", "grpo", "token_grpo", "rloo", "gigpo"};
    return n;
  }
};
/** One of EnumNames<Estimator> (std::invalid_argument otherwise).
 *  GiGPO needs each step's anchor state (trainer/rewards/gigpo.h); the trainer computes it apart. */
Estimator parse_estimator(const std::string& name);
bool uses_groups(Estimator estimator);

/** A sample's token rewards in three streams of equal shape. */
struct SampleRewards {
  TokenRewards outcome;  // the episode's final env reward
  TokenRewards process;  // every other env reward (steps, invalid-action penalties)
  TokenRewards penalty;  // KL-in-reward terms: kept at their scale, never normalised
};

/**
 * A critic-free estimator over samples (a collection's episode segments: each slot's consecutive
 * turns of one episode, token rewards concatenated). REINFORCE++ discounts by `gamma` and whitens
 * over all samples; the group estimators pool the samples sharing a group key (the same start
 * state) and give zero advantage to a sample with no partner in the batch. Outcome and process
 * rewards are normalised separately when both are present, then summed; the penalty is added as
 * its discounted sum to go. With `ranks` (a data-parallel run) REINFORCE++ whitens over the samples of
 * every rank; the group estimators need no other rank, as a group's samples all live on one.
 */
TokenRewards sample_advantages(Estimator estimator, const SampleRewards& rewards, const std::vector<uint64_t>& group_keys,
                               double gamma, RankSum* ranks = nullptr);

/** Adds each sample's KL-in-reward terms to its advantages as their discounted sum to go. */
void add_penalty_to_go(TokenRewards& advantages, const TokenRewards& penalty, double gamma);

}  // namespace turnrl::trainer
