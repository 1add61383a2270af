// Advantage estimators against hand-computed tables: dual-discount GAE, whitening, the group
// estimators (GRPO, token GRPO, RLOO, REINFORCE++) over samples and episode segments; the learning
// rate schedule. Torch-free: the no-torch build runs it.
#include <doctest/doctest.h>

#include <cmath>
#include <optional>
#include <stdexcept>
#include <vector>

#include "trainer/algo/advantages.h"
#include "trainer/sft/lr_schedule.h"

using namespace turnrl::trainer;

TEST_CASE("dual-discount GAE reproduces the worked example of verlog.md 6.3") {
  std::vector<TurnSignals> turns(3);
  turns[0] = {{0.50f, 0.55f, 0.60f}, {0, 0, 0}, false};
  turns[1] = {{0.70f, 0.75f, 0.80f}, {0, 1, 0}, true};
  turns[2] = {{0.30f, 0.35f, 0.40f}, {0, 0, 0}, false};
  const auto out = dual_discount_gae(turns, 0.45f, GaeParams{0.99, 0.95, 1.0, 1.0});
  const std::vector<std::vector<float>> advantages = {{0.47515f, 0.42515f, 0.37515f}, {0.30f, 0.25f, -0.80f}, {0.1455f, 0.0955f, 0.0455f}};
  const std::vector<std::vector<float>> returns = {{0.97515f, 0.97515f, 0.97515f}, {1.0f, 1.0f, 0.0f}, {0.4455f, 0.4455f, 0.4455f}};
  for (int t = 0; t < 3; ++t) {
    for (int k = 0; k < 3; ++k) {
      CHECK(out[t].advantages[k] == doctest::Approx(advantages[t][k]).epsilon(1e-5));
      CHECK(out[t].returns[k] == doctest::Approx(returns[t][k]).epsilon(1e-5));
    }
  }
  // The actor's positions (k = 0, 1 of each turn), whitened: the spec's table.
  std::vector<float> actor = {out[0].advantages[0], out[0].advantages[1], out[1].advantages[0],
                              out[1].advantages[1], out[2].advantages[0], out[2].advantages[1]};
  std::vector<float*> entries;
  for (float& x : actor) entries.push_back(&x);
  whiten(entries);
  const std::vector<float> whitened = {1.288f, 0.955f, 0.121f, -0.213f, -0.909f, -1.242f};
  for (size_t i = 0; i < actor.size(); ++i) CHECK(actor[i] == doctest::Approx(whitened[i]).epsilon(2e-3));
}

TEST_CASE("GAE with token discounting and without bootstrap") {
  // One turn, two response tokens, token gamma 0.5, reward 1 on the last token, episode ends.
  const auto out = dual_discount_gae({{{0.0f, 0.0f, 0.0f}, {0.0f, 1.0f, 0.0f}, true}}, std::nullopt, GaeParams{0.99, 0.95, 0.5, 1.0});
  // k=2: delta = 0 (terminal) -> 0; k=1: delta = 1 + 0.5*0 - 0 = 1, A = 1 + 0.5*1*0 = 1; k=0: A = 0 + 0.5*1 = 0.5
  CHECK(out[0].advantages == std::vector<float>{0.5f, 1.0f, 0.0f});
  // A bootstrap value is ignored after a done turn.
  const auto same = dual_discount_gae({{{0.0f, 0.0f, 0.0f}, {0.0f, 1.0f, 0.0f}, true}}, 5.0f, GaeParams{0.99, 0.95, 0.5, 1.0});
  CHECK(same[0].advantages == out[0].advantages);
  CHECK_THROWS_AS(dual_discount_gae({{{0.0f}, {0.0f, 1.0f}, false}}, std::nullopt, GaeParams{}), std::invalid_argument);
}

TEST_CASE("group estimators on four samples of lengths 3, 2, 4, 3") {
  const TokenRewards rewards = {{0.1f, 0.2f, 0.9f}, {0.0f, 0.3f}, {0.2f, 0.1f, 0.0f, 0.4f}, {0.5f, 0.1f, 0.3f}};
  // Pooled token mean: 3.1 / 12 = 0.258; per-sample means 0.4, 0.15, 0.175, 0.3: the leave-one-out
  // baseline of sample 1 is (0.15 + 0.175 + 0.3) / 3 = 0.2083; of sample 2 it is 0.2917.
  const TokenRewards tg = token_grpo(rewards);
  double pooled = 0;
  int count = 0;
  for (const auto& row : rewards) {
    for (float x : row) {
      pooled += x;
      ++count;
    }
  }
  CHECK(pooled / count == doctest::Approx(0.2583).epsilon(1e-3));
  // Token GRPO: normalised tokens summed from the end; the last token of sample 1 is (0.9 - 0.258)/std.
  double var = 0;
  for (const auto& row : rewards) {
    for (float x : row) var += (x - pooled / count) * (x - pooled / count);
  }
  const double std = std::sqrt(var / (count - 1));
  CHECK(tg[0][2] == doctest::Approx((0.9 - pooled / count) / std).epsilon(1e-4));
  CHECK(tg[0][0] == doctest::Approx(((0.1 + 0.2 + 0.9) - 3 * pooled / count) / std).epsilon(1e-4));

  const TokenRewards loo = rloo(rewards);
  const double baseline0 = (0.15 + 0.175 + 0.3) / 3.0;
  CHECK(loo[0][2] == doctest::Approx(0.9 - baseline0).epsilon(1e-5));
  CHECK(loo[0][0] == doctest::Approx(1.2 - 3 * baseline0).epsilon(1e-5));
  const double baseline1 = (0.4 + 0.175 + 0.3) / 3.0;
  CHECK(loo[1][0] == doctest::Approx(0.3 - 2 * baseline1).epsilon(1e-5));

  const TokenRewards g = grpo(rewards);
  CHECK(g[0][0] == g[0][2]);  // one scalar per sample
  CHECK(g[0][0] > 0);         // sample 0 has the largest total (1.2)
  CHECK(g[1][0] < 0);

  const TokenRewards rpp = reinforce_plus_plus({{0.0f, 1.0f}, {1.0f, 0.0f}}, 0.5);
  // returns: [0.5, 1], [1, 0] -> whitened over the four values (mean 0.625)
  CHECK(rpp[0][1] == doctest::Approx(rpp[1][0]));
  CHECK(rpp[1][1] < rpp[0][0]);
}

TEST_CASE("estimators over episode segments: groups by start state, lone samples get zero") {
  // Samples 0 and 2 share a start state, 1 has no partner in the batch. Outcome rewards only.
  const SampleRewards samples = {{{0.0f, 1.0f}, {0.5f}, {0.0f, 0.0f, -1.0f}}, {{0, 0}, {0}, {0, 0, 0}}, {{0, 0}, {0}, {0, 0, 0}}};
  const std::vector<uint64_t> keys = {7, 9, 7};
  // GRPO: totals 1 and -1 -> mean 0, std sqrt(2): +-0.7071 on every token; the lone sample 0.
  const TokenRewards g = sample_advantages(Estimator::kGrpo, samples, keys, 1.0);
  REQUIRE(g[0].size() == 2u);
  CHECK(g[0][0] == doctest::Approx(0.70711).epsilon(1e-4));
  CHECK(g[0][1] == doctest::Approx(0.70711).epsilon(1e-4));
  CHECK(g[1] == std::vector<float>{0.0f});
  CHECK(g[2][0] == doctest::Approx(-0.70711).epsilon(1e-4));
  // RLOO: sample means 0.5 and -1/3; baselines -1/3 and 0.5; reverse cumulative sums.
  const TokenRewards r = sample_advantages(Estimator::kRloo, samples, keys, 1.0);
  CHECK(r[0][1] == doctest::Approx(1.0 + 1.0 / 3));
  CHECK(r[0][0] == doctest::Approx(1.0 / 3 + 1.0 + 1.0 / 3));
  CHECK(r[2][2] == doctest::Approx(-1.5));
  CHECK(r[2][0] == doctest::Approx(-0.5 - 0.5 - 1.5));
  // REINFORCE++ ignores the groups: discounted returns (gamma 0.5) whitened over all six tokens.
  const TokenRewards p = sample_advantages(Estimator::kReinforcePlusPlus, samples, keys, 0.5);
  // Returns 0.5 1 | 0.5 | -0.25 -0.5 -1: mean 0.04167, unbiased std 0.74861.
  const TokenRewards returns = {{0.5f, 1.0f}, {0.5f}, {-0.25f, -0.5f, -1.0f}};
  for (size_t i = 0; i < p.size(); ++i) {
    for (size_t k = 0; k < p[i].size(); ++k) CHECK(p[i][k] == doctest::Approx((returns[i][k] - 0.041667) / 0.74861).epsilon(1e-3));
  }
  // Outcome and process rewards normalised separately, then summed; the KL penalty added raw as its sum to go.
  SampleRewards both = samples;
  both.process = {{0.2f, 0.0f}, {0.0f}, {0.0f, 0.6f, 0.0f}};  // totals 0.2 and 0.6: GRPO gives -+0.7071
  both.penalty = {{-0.01f, -0.02f}, {0.0f}, {0.0f, 0.0f, 0.0f}};
  const TokenRewards split = sample_advantages(Estimator::kGrpo, both, keys, 1.0);
  CHECK(split[0][0] == doctest::Approx(0.70711 - 0.70711 - 0.03).epsilon(1e-4));
  CHECK(split[0][1] == doctest::Approx(0.70711 - 0.70711 - 0.02).epsilon(1e-4));
  CHECK(split[2][1] == doctest::Approx(-0.70711 + 0.70711).epsilon(1e-4));
  SampleRewards ragged = samples;
  ragged.penalty[1].push_back(0.0f);
  CHECK_THROWS_AS(sample_advantages(Estimator::kGrpo, ragged, keys, 1.0), std::invalid_argument);
  CHECK(uses_groups(parse_estimator("token_grpo")));
  CHECK_FALSE(uses_groups(parse_estimator("reinforce++")));
  CHECK_THROWS_AS(parse_estimator("ppo"), std::invalid_argument);
  CHECK_THROWS_AS(sample_advantages(Estimator::kGae, samples, keys, 1.0), std::invalid_argument);
}

TEST_CASE("learning rate schedules: constant, and cosine from lr down to 0 over the steps") {
  CHECK(scheduled_lr(LrSchedule::kConstant, 1e-3, 7, 10) == 1e-3);
  CHECK(scheduled_lr(LrSchedule::kCosine, 1e-3, 0, 10) == doctest::Approx(1e-3));
  CHECK(scheduled_lr(LrSchedule::kCosine, 1e-3, 5, 10) == doctest::Approx(5e-4));
  CHECK(scheduled_lr(LrSchedule::kCosine, 1e-3, 9, 10) < 3e-5);
}
