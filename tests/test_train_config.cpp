// Training configs: every key validated with the file and line named, the resolved config loading
// back to itself, the reward sections. Torch-free: the no-torch build runs it.
#include <doctest/doctest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "train_test_util.h"
#include "trainer/config/train_config.h"

using namespace turnrl::trainer;
using turnrl::test::write_config;

TEST_CASE("configs validate every key and name the file and line") {
  for (const auto& entry : std::filesystem::directory_iterator(std::string(TURNRL_SOURCE_DIR) + "/configs")) {
    if (entry.path().filename().string().rfind("eval", 0) == 0) continue;  // eval sweeps have their own schema
    INFO(entry.path().string());
    CHECK_NOTHROW(TrainConfig::load(entry.path().string()));
  }
  const std::string base = "model:\n  path: /no/such/model\n";
  auto fails_with = [&](const std::string& name, const std::string& text, const std::string& message) {
    INFO(name << ": " << message);
    CHECK_THROWS_WITH_AS(TrainConfig::load(write_config(name, text)), doctest::Contains(message.c_str()), std::invalid_argument);
  };
  fails_with("a.yaml", base + "env:\n  n_env: 4\n  e_lenn: 3\n", "a.yaml:5: env.e_lenn: unknown key");
  fails_with("b.yaml", base + "env:\n  e_len: 0\n", "b.yaml:4: env.e_len: must be > 0");
  fails_with("c.yaml", base + "ppo:\n  clip: lots\n", "c.yaml:4: ppo.clip: has the wrong type");
  fails_with("d.yaml", "model:\n  device: cpu\n", "model.path: is required");
  fails_with("e.yaml", base + "trainer:\n  x: 1\n", "e.yaml:3: trainer: unknown key");
  fails_with("f.yaml", base + "turn:\n  layout: fancy\n", "f.yaml:4: turn.layout: must be balrog, verlog, compact or transcript");
  fails_with("f2.yaml", base + "turn:\n  history: -1\n", "f2.yaml:4: turn.history: must be >= 0");
  fails_with("f3.yaml", base + "turn:\n  prompt_format: compact\n", "f3.yaml:4: turn.prompt_format: unknown key");
  CHECK_THROWS_AS(TrainConfig::load(turnrl::test::config_dir() / "missing.yaml"), std::invalid_argument);
  fails_with("h.yaml", base + "env:\n  id: babyai/gotoo\n", "h.yaml:4: env.id: names an unknown environment 'babyai/gotoo'");
  fails_with("i.yaml", base + "env:\n  id: [babyai/goto, babyai/open]\n  n_env: 1\n", "i.yaml:5: env.n_env: must be at least the number of tasks");
  fails_with("j.yaml", base + "env:\n  id: []\n", "env.id: must not be an empty list");
  fails_with("m.yaml", base + "ppo:\n  estimator: rloo\n", "m.yaml:4: ppo.estimator: 'rloo' compares episodes of one start state");
  fails_with("n.yaml", base + "env:\n  n_env: 6\n  group_size: 4\n", "n.yaml:5: env.group_size: must divide env.n_env");
  fails_with("o.yaml", base + "ppo:\n  estimator: a2c\n", "ppo.estimator: must be gae, reinforce++");
  // Values that cannot be honoured are errors, not silent fixes.
  fails_with("p.yaml", base + "env:\n  n_env: 4\n  e_len: 2\nppo:\n  minibatch: 9\n", "p.yaml:7: ppo.minibatch: must be at most the batch");
  fails_with("q.yaml", base + "run:\n  seed: -3\n", "q.yaml:4: run.seed: must be >= 0, got -3");
  fails_with("r.yaml", base + "run:\n  eval_seed: -1\n", "run.eval_seed: must be >= 0");
  fails_with("r2.yaml", base + "run:\n  eval_decoding: beam\n", "r2.yaml:4: run.eval_decoding: must be greedy or sampled");
  fails_with("r3.yaml", base + "run:\n  eval_episodes: 0\n  keep_best: true\n", "r3.yaml:5: run.keep_best: needs evaluations");
  fails_with("r4.yaml", base + "run:\n  keep_best: true\n  eval_seed: 100000\n  final_eval_seed: 100100\n",
             "r4.yaml:6: run.final_eval_seed: final evaluation seeds 100100..100299 overlap the periodic evaluation seeds 100000..100199");
  fails_with("r5.yaml", base + "run:\n  keep_best: true\n  final_eval_seed: 1000100\n",
             "r5.yaml:5: run.final_eval_seed: final evaluation seeds 1000100..1000299 overlap the training seeds from 1000000");
  // The final evaluation's block is as long as final_eval_episodes says, so that length decides overlap.
  fails_with("r6.yaml", base + "run:\n  keep_best: true\n  final_eval_seed: 99900\n  final_eval_episodes: 150\n",
             "r6.yaml:5: run.final_eval_seed: final evaluation seeds 99900..100049 overlap the periodic evaluation seeds 100000..100199");
  fails_with("r7.yaml", base + "run:\n  final_eval_episodes: -4\n", "r7.yaml:4: run.final_eval_episodes: must be >= 0");
  fails_with("s.yaml", base + "run:\n  seed: 1\n  seed: 2\n", "s.yaml:5: seed: duplicate key");
  fails_with("t.yaml", base + "model:\n  threads: 2\n", "t.yaml:3: model: duplicate key");
  fails_with("t2.yaml", "model:\n  path: /no/such/model\n  preset: tiny\n  initializer_range: -0.1\n", "t2.yaml:4: model.initializer_range: must be >= 0");
  fails_with("t3.yaml", base + "  initializer_range: 0.125\n", "t3.yaml:3: model.initializer_range: needs model.preset");
  // Found with tests/fuzz/fuzz_config: the product of tasks and group size overflowed an int (UB).
  fails_with("v.yaml", base + "env:\n  id: [babyai/goto, babyai/open]\n  n_env: 8\n  group_size: 2000000000\n",
             "v.yaml:5: env.n_env: must be at least the number of tasks");
  // Found with tests/fuzz/fuzz_config: an option name that is not UTF-8 made to_yaml() throw a json::type_error.
  fails_with("u.yaml", base + "env:\n  options: {n\xf9m: 2}\n", "u.yaml:4: env.options: must be UTF-8 text");
  fails_with("w.yaml", base + "format:\n  model: /no/such/format-model\n  tasks: [babyai/open]\nenv:\n  id: babyai/goto\n",
             "w.yaml:5: format.tasks: names 'babyai/open', which is not one of env.id");
  const TrainConfig mix = TrainConfig::load(write_config("k.yaml", base + "env:\n  id: [babyai/goto, babyai/open]\n"));
  CHECK(mix.env.ids == std::vector<std::string>{"babyai/goto", "babyai/open"});
  TrainConfig::Env grouped = mix.env;
  grouped.group_size = 2;  // whole groups take the tasks in turn
  CHECK(std::vector<size_t>{grouped.task_of_slot(0), grouped.task_of_slot(1), grouped.task_of_slot(2), grouped.task_of_slot(3),
                            grouped.task_of_slot(4)} == std::vector<size_t>{0, 0, 1, 1, 0});
  // The resolved config (saved beside checkpoints) loads back to the same tasks and turn settings.
  const TrainConfig tiny = TrainConfig::load(std::string(TURNRL_SOURCE_DIR) + "/configs/babyai-tiny.yaml");
  const TrainConfig reloaded = TrainConfig::load(write_config("l.yaml", tiny.to_yaml()));
  CHECK(reloaded.to_yaml() == tiny.to_yaml());
  CHECK(reloaded.turn.layout == TurnLayout::kCompact);
  const TrainConfig baba = TrainConfig::load(std::string(TURNRL_SOURCE_DIR) + "/configs/babaisai-verlog-tiny.yaml");
  CHECK_FALSE(baba.format.tasks.empty());
  CHECK(TrainConfig::load(write_config("l2.yaml", baba.to_yaml())).to_yaml() == baba.to_yaml());
}

TEST_CASE("reward config: managers with process, the process and scorer sections, every key validated") {
  const std::string base = "model:\n  path: /no/such/model\nenv:\n  id: arith/single\n  group_size: 2\nppo:\n  estimator: rloo\n";
  auto fails_with = [&](const std::string& name, const std::string& text, const std::string& message) {
    INFO(name << ": " << message);
    CHECK_THROWS_WITH_AS(TrainConfig::load(write_config(name, text)), doctest::Contains(message.c_str()), std::invalid_argument);
  };
  const TrainConfig process = TrainConfig::load(write_config(
      "rp.yaml", base + "sampling:\n  max_response_tokens: 4\n  extra_tokens: [So, '.']\n"
                        "reward:\n  manager: [episode, process]\n  streaming: false\n  process:\n    markers: ['So ', 'Wait,']\n"
                        "    max_segment_tokens: 12\n    answer_prompt: ' Action'\n    weight: 20\n  scorer:\n    url: http://127.0.0.1:9/score\n"
                        "    concurrency: 3\n    timeout: 2.5\n    retries: 1\n"));
  CHECK(process.reward.manager == TrainConfig::Reward::Manager::kEpisode);
  CHECK(process.reward.process);
  CHECK_FALSE(process.reward.streaming);
  CHECK(process.reward.process_rewards.segmentation.markers == std::vector<std::string>{"So ", "Wait,"});
  CHECK(process.reward.process_rewards.segmentation.max_segment_tokens == 12u);
  CHECK(process.reward.process_rewards.answer_prompt == " Action");
  CHECK(process.reward.process_rewards.weight == 20.0);
  CHECK(process.sampling.extra_tokens == std::vector<std::string>{"So", "."});
  CHECK(process.reward.scorer.url == "http://127.0.0.1:9/score");
  CHECK(process.reward.scorer.concurrency == 3);
  CHECK(process.reward.scorer.retry.timeout_s == 2.5);
  CHECK(process.reward.scorer.retry.retries == 1);
  // The resolved config round-trips, sections and quoted prompt included.
  const TrainConfig reloaded = TrainConfig::load(write_config("rp2.yaml", process.to_yaml()));
  CHECK(reloaded.to_yaml() == process.to_yaml());
  CHECK(reloaded.sampling.extra_tokens == process.sampling.extra_tokens);
  CHECK(reloaded.reward.process);
  CHECK(reloaded.reward.process_rewards.answer_prompt == " Action");
  CHECK(reloaded.reward.scorer.url == process.reward.scorer.url);
  fails_with("r1.yaml", base + "reward:\n  manager: process\n", "r1.yaml:9: reward.manager: must be env or episode, or a list");
  fails_with("r12.yaml", base + "reward:\n  manager: [env, process]\n  process:\n    weight: 0\n", "reward.process.weight: must be > 0");
  fails_with("r2.yaml", base + "reward:\n  manager: [env, episode]\n", "reward.manager: must be env or episode, or a list");
  fails_with("r3.yaml", base + "reward:\n  manager: [env, critic]\n", "got 'critic'");
  fails_with("r4.yaml", base + "reward:\n  process:\n    markers: [So]\n", "reward.process: configures process rewards: list process in reward.manager");
  fails_with("r5.yaml", base + "reward:\n  manager: [env, process]\n  process:\n    max_segment_tokens: 0\n",
             "reward.process.max_segment_tokens: must be > 0");
  fails_with("r6.yaml", base + "reward:\n  manager: [env, process]\n  process:\n    answer: x\n", "reward.process.answer: unknown key");
  fails_with("r7.yaml", base + "reward:\n  scorer:\n    concurrency: 2\n", "reward.scorer.url: is required");
  fails_with("r8.yaml", base + "reward:\n  scorer:\n    url: https://x/score\n", "reward.scorer.url: http scorer: the URL must start with http://");
  fails_with("r9.yaml", base + "reward:\n  scorer:\n    url: http://x/s\n    retries: -1\n", "reward.scorer.retries: must be >= 0");
  fails_with("r10.yaml", "model:\n  path: /no/such/model\nenv:\n  group_size: 2\nppo:\n  estimator: grpo\nreward:\n  manager: [env, process]\n",
             "process rewards need an estimator that keeps token rewards");
  fails_with("r11.yaml", base + "sampling:\n  action_tokens_only: false\n  extra_tokens: [So]\n",
             "sampling.extra_tokens: widens action_tokens_only");
}

TEST_CASE("reward config: options of the episode manager and of group estimators are refused without them") {
  CHECK_THROWS_WITH_AS(TrainConfig::load(write_config("gigpo-bad.yaml", "model:\n  path: /no/such/model\nreward:\n  normalize_by_length: true\n")),
                       doctest::Contains("reward.normalize_by_length: applies to reward.manager: episode only"), std::invalid_argument);
  CHECK_THROWS_WITH_AS(TrainConfig::load(write_config("dynamic-bad.yaml", "model:\n  path: /no/such/model\nreward:\n  dynamic_sampling_tries: 2\n")),
                       doctest::Contains("reward.dynamic_sampling_tries: drops groups without signal"), std::invalid_argument);
}
