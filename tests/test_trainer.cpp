// Advantage estimators and PPO losses against hand-computed tables; config validation.
#include "torch_doctest.h"

#include <filesystem>
#include <fstream>
#include <map>

#include <nlohmann/json.hpp>

#include "trainer/advantages.h"
#include "trainer/ppo_loss.h"
#include "trainer/acting.h"
#include "trainer/ppo_trainer.h"
#include "envs/registry.h"
#include "agents/tokenizer.h"
#include "trainer/train_config.h"
#include "test_util.h"

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

TEST_CASE("clipped policy loss, dual clip and the clipped value loss") {
  const torch::Tensor mask = torch::tensor({1, 1, 1, 0}, torch::kBool).view({1, 4});
  const torch::Tensor old_lp = torch::zeros({1, 4});
  // ratios e^0.5 (clipped to 1.2 for A>0), e^-0.5 (A>0: unclipped 0.607), e^1 with A<0 (dual clip 3)
  const torch::Tensor lp = torch::tensor({0.5f, -0.5f, 1.0f, 9.0f}).view({1, 4});
  const torch::Tensor adv = torch::tensor({1.0f, 1.0f, -1.0f, 5.0f}).view({1, 4});
  const PolicyLoss pl = policy_loss(lp, old_lp, adv, mask, {0.2, 3.0});
  const double e = std::exp(1.0);
  // per token: -min(1.6487*1, 1.2*1) = -1.2; -min(0.6065, 0.8) = -0.6065; max(e, 1.2)=2.718 -> min(2.718, 3) = 2.718
  CHECK(pl.loss.item<double>() == doctest::Approx((-1.2 - std::exp(-0.5) + e) / 3).epsilon(1e-5));
  const torch::Tensor big = torch::tensor({0.0f, 0.0f, 2.0f, 0.0f}).view({1, 4});
  const PolicyLoss dual = policy_loss(big, old_lp, adv, mask, {0.2, 3.0});
  CHECK(dual.loss.item<double>() == doctest::Approx((-1.0 - 1.0 + 3.0) / 3).epsilon(1e-5));  // e^2 = 7.39 bounded by 3

  const torch::Tensor values = torch::tensor({1.0f, 0.0f}).view({1, 2});
  const torch::Tensor old_values = torch::tensor({0.0f, 0.0f}).view({1, 2});
  const torch::Tensor returns = torch::tensor({0.0f, 1.0f}).view({1, 2});
  const torch::Tensor vmask = torch::ones({1, 2}, torch::kBool);
  const torch::Tensor weights = torch::tensor({3.0f, 1.0f}).view({1, 2});
  // token 0: max((1-0)^2, (0.5-0)^2) = 1, weight 3; token 1: max(1, 1) = 1 -> 0.5 * (3 + 1) / 2
  CHECK(value_loss(values, old_values, returns, vmask, weights, 0.5).item<double>() == doctest::Approx(1.0));
}

TEST_CASE("gradient clipping is applied") {
  torch::nn::Linear layer(4, 4);
  const torch::Tensor loss = (layer(torch::ones({2, 4})) * 1000).pow(2).sum();
  loss.backward();
  torch::nn::utils::clip_grad_norm_(layer->parameters(), 0.5);
  double norm = 0;
  for (const auto& p : layer->parameters()) norm += p.grad().pow(2).sum().item<double>();
  CHECK(std::sqrt(norm) <= doctest::Approx(0.5).epsilon(1e-4));
}

namespace {

std::string write_config(const std::string& name, const std::string& text) {
  std::filesystem::create_directories("/tmp/turnrl_configs");
  const std::string path = "/tmp/turnrl_configs/" + name;
  std::ofstream(path) << text;
  return path;
}

}  // namespace

TEST_CASE("configs validate every key and name the file and line") {
  for (const auto& entry : std::filesystem::directory_iterator(std::string(TURNRL_SOURCE_DIR) + "/configs")) {
    if (entry.path().filename().string().rfind("eval", 0) == 0) continue;  // eval sweeps have their own schema
    INFO(entry.path().string());
    CHECK_NOTHROW(TrainConfig::load(entry.path().string()));
  }
  const std::string base = "model:\n  path: /tmp/x\n";
  CHECK_THROWS_WITH_AS(TrainConfig::load(write_config("a.yaml", base + "env:\n  n_env: 4\n  e_lenn: 3\n")),
                       doctest::Contains("a.yaml:5: unknown key 'env.e_lenn'"), std::invalid_argument);
  CHECK_THROWS_WITH_AS(TrainConfig::load(write_config("b.yaml", base + "env:\n  e_len: 0\n")),
                       doctest::Contains("b.yaml:4: key 'env.e_len' must be positive"), std::invalid_argument);
  CHECK_THROWS_WITH_AS(TrainConfig::load(write_config("c.yaml", base + "ppo:\n  clip: lots\n")),
                       doctest::Contains("key 'ppo.clip' has the wrong type"), std::invalid_argument);
  CHECK_THROWS_WITH_AS(TrainConfig::load(write_config("d.yaml", "model:\n  device: cpu\n")),
                       doctest::Contains("'model.path' is required"), std::invalid_argument);
  CHECK_THROWS_WITH_AS(TrainConfig::load(write_config("e.yaml", base + "trainer:\n  x: 1\n")),
                       doctest::Contains("unknown section 'trainer'"), std::invalid_argument);
  CHECK_THROWS_WITH_AS(TrainConfig::load(write_config("f.yaml", base + "env:\n  prompt_format: fancy\n")),
                       doctest::Contains("prompt_format"), std::invalid_argument);
  CHECK_THROWS_AS(TrainConfig::load("/tmp/turnrl_configs/missing.yaml"), std::invalid_argument);
  CHECK_THROWS_WITH_AS(TrainConfig::load(write_config("h.yaml", base + "env:\n  id: babyai/gotoo\n")),
                       doctest::Contains("h.yaml:4: key 'env.id' names an unknown environment 'babyai/gotoo'"),
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(TrainConfig::load(write_config("i.yaml", base + "env:\n  id: [babyai/goto, babyai/open]\n  n_env: 1\n")),
                       doctest::Contains("i.yaml:5: key 'env.n_env' must be at least the number of tasks"),
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(TrainConfig::load(write_config("j.yaml", base + "env:\n  id: []\n")),
                       doctest::Contains("key 'env.id' must not be an empty list"), std::invalid_argument);
  CHECK_THROWS_WITH_AS(TrainConfig::load(write_config("m.yaml", base + "ppo:\n  estimator: rloo\n")),
                       doctest::Contains("m.yaml:4: key 'ppo.estimator' 'rloo' compares episodes of one start state"),
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(TrainConfig::load(write_config("n.yaml", base + "env:\n  n_env: 6\n  group_size: 4\n")),
                       doctest::Contains("n.yaml:5: key 'env.group_size' must divide env.n_env"), std::invalid_argument);
  CHECK_THROWS_WITH_AS(TrainConfig::load(write_config("o.yaml", base + "ppo:\n  estimator: a2c\n")),
                       doctest::Contains("key 'ppo.estimator' must be gae, reinforce++"), std::invalid_argument);
  const TrainConfig mix = TrainConfig::load(write_config("k.yaml", base + "env:\n  id: [babyai/goto, babyai/open]\n"));
  CHECK(mix.env.ids == std::vector<std::string>{"babyai/goto", "babyai/open"});
  // The resolved config (saved beside checkpoints) loads back to the same tasks.
  CHECK(TrainConfig::load(write_config("l.yaml", mix.to_yaml())).env.ids == mix.env.ids);
  // A missing model folder without a preset is refused before any work starts.
  auto result = turnrl::test::run_turnrl("train --config " + write_config("g.yaml", "model:\n  path: /tmp/no/such/model\n"));
  CHECK(result.exit_code == 1);
  CHECK(result.output.find("holds no model") != std::string::npos);
}

namespace {

/** metrics.jsonl lines by "type/iteration" (or "type/step"), without the wall-clock fields. */
std::map<std::string, nlohmann::json> deterministic_metrics(const std::string& path) {
  std::map<std::string, nlohmann::json> lines;
  std::ifstream in(path);
  for (std::string text; std::getline(in, text);) {
    nlohmann::json line = nlohmann::json::parse(text);
    for (const char* key : {"minutes", "turns_per_s", "rollout_share"}) line.erase(key);
    const std::string key = line["type"].get<std::string>() + "/" +
                            std::to_string(line.contains("iteration") ? line["iteration"].get<int>() : line["step"].get<int>());
    lines[key] = line;
  }
  return lines;
}

}  // namespace

TEST_CASE("a resumed run continues from the checkpoint's exact state") {
  const std::string root = "/tmp/turnrl_resume_test";
  std::filesystem::remove_all(root);
  // Episodes of BabyAI goto outlast e_len = 3, so the checkpoint cuts them mid-episode.
  const std::string yaml = "model:\n  path: " + root + "/model\n  preset: tiny\n  threads: 1\n"
                           "env:\n  id: [babyai/goto, babyai/open]\n  n_env: 4\n  e_len: 3\n"
                           "ppo:\n  minibatch: 6\n  epochs: 2\n  critic_warmup_iterations: 1\n"
                           "run:\n  iterations: 4\n  checkpoint_every: 2\n  eval_every: 2\n  eval_episodes: 2\n";
  const TrainConfig config = TrainConfig::load(write_config("resume.yaml", yaml));
  TrainConfig uninterrupted = config;
  uninterrupted.run.out = root + "/uninterrupted";
  PpoTrainer(uninterrupted, "").train();

  TrainConfig interrupted = config;
  interrupted.run.out = root + "/interrupted";
  interrupted.run.iterations = 2;
  PpoTrainer(interrupted, "").train();
  std::ifstream state_file(interrupted.run.out + "/checkpoint/state.json");
  const nlohmann::json state = nlohmann::json::parse(state_file);
  size_t steps_in_flight = 0;
  for (const auto& slot : state.at("rollout").at("slots")) steps_in_flight += slot.at("replies").size();
  CHECK(steps_in_flight > 0);
  interrupted.run.iterations = 4;
  PpoTrainer(interrupted, interrupted.run.out + "/checkpoint").train();

  const auto expected = deterministic_metrics(uninterrupted.run.out + "/metrics.jsonl");
  const auto resumed = deterministic_metrics(interrupted.run.out + "/metrics.jsonl");
  for (const std::string key : {"train/3", "train/4", "eval/4"}) {
    INFO(key);
    REQUIRE(expected.count(key) == 1);
    REQUIRE(resumed.count(key) == 1);
    CHECK(resumed.at(key).dump() == expected.at(key).dump());
  }
  // Later turns depend on the restored episodes: their losses must differ from the first iterations'.
  CHECK(expected.at("train/3")["value_loss"] != expected.at("train/1")["value_loss"]);
}

TEST_CASE("a group estimator trains without the critic on groups sharing their start state") {
  const std::string root = "/tmp/turnrl_group_test";
  std::filesystem::remove_all(root);
  const std::string yaml = "model:\n  path: " + root + "/model\n  preset: tiny\n  threads: 1\n"
                           "env:\n  id: [babyai/goto, babyai/open]\n  n_env: 8\n  e_len: 4\n  group_size: 2\n"
                           "ppo:\n  estimator: grpo\n  minibatch: 8\n  epochs: 1\n  critic_warmup_iterations: 1\n"
                           "run:\n  iterations: 2\n  checkpoint_every: 2\n  eval_every: 2\n  eval_episodes: 1\n  out: " + root + "/run\n";
  PpoTrainer(TrainConfig::load(write_config("group.yaml", yaml)), "").train();
  std::ifstream in(root + "/run/metrics.jsonl");
  int train_lines = 0;
  for (std::string text; std::getline(in, text);) {
    const nlohmann::json line = nlohmann::json::parse(text);
    CHECK(line["type"] != "critic_warmup");  // no critic to warm up
    if (line["type"] != "train") continue;
    ++train_lines;
    CHECK_FALSE(line.contains("value_loss"));
    CHECK(std::isfinite(line["policy_loss"].get<double>()));
  }
  CHECK(train_lines == 2);
}

TEST_CASE("action tokens are the tokens after the last ACTION: marker") {
  const auto tokenizer = turnrl::agents::Tokenizer::load(turnrl::test::shared_path("tokenizers/qwen"));
  const std::vector<int32_t> ids = tokenizer.encode("THINK: the key is ahead. ACTION: maybe\nACTION: go forward");
  const int start = action_token_start(ids, tokenizer, false);
  REQUIRE(start > 0);
  REQUIRE(start < static_cast<int>(ids.size()));
  const std::string before(tokenizer.decode({ids.begin(), ids.begin() + start}));
  CHECK(before.size() >= before.rfind("ACTION:") + 7);
  CHECK(before.find("go") == std::string::npos);
  CHECK(tokenizer.decode({ids.begin() + start, ids.end()}).find("go forward") != std::string::npos);
  const std::vector<int32_t> no_marker = tokenizer.encode("no marker at all");
  CHECK(action_token_start(no_marker, tokenizer, false) == static_cast<int>(no_marker.size()));
  CHECK(action_token_start(ids, tokenizer, true) == 0);
}
