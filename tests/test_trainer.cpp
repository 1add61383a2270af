// PPO losses against hand-computed tables, the trainer's update, and training runs (resume, evaluation,
// layouts, group estimators, reward managers). The estimators' maths: test_algo; configs: test_train_config.
#include "torch_doctest.h"

#include <filesystem>
#include <fstream>
#include <map>

#include <nlohmann/json.hpp>

#include "trainer/algo/advantages.h"
#include "trainer/algo/ppo_loss.h"
#include "trainer/rollout/policy_agent.h"
#include "trainer/algo/ppo_update.h"
#include "trainer/eval/evaluation.h"
#include "trainer/rollout/rollout.h"
#include "trainer/run/run_folder.h"
#include "agents/model/generation.h"
#include "agents/model/language_model.h"
#include "agents/model/new_model.h"
#include "trainer/run/ppo_trainer.h"
#include "envs/registry.h"
#include "agents/model/tokenizer.h"
#include "trainer/config/train_config.h"
#include "temp_dir.h"
#include "test_util.h"
#include "train_test_util.h"
#include "tools/serve/stub_http_server.h"

using namespace turnrl::trainer;
using turnrl::test::metrics_of_type;
using turnrl::test::read_json;
using turnrl::test::write_config;

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

TEST_CASE("the anchor KL: KL(reference || policy) over the whole vocabulary, zero at the reference") {
  const torch::Tensor mask = torch::tensor({1, 0}, torch::kBool).view({1, 2});
  // Position 0: reference (0.5, 0.5, 0), policy (0.9, 0.1, 0) with the third token barred (-inf in
  // both, as with a restricted vocabulary). Position 1 is masked.
  const torch::Tensor ref = torch::tensor({0.5f, 0.5f, 0.0f, 0.2f, 0.3f, 0.5f}).view({1, 2, 3}).log();
  const torch::Tensor policy_logits = torch::tensor({0.9f, 0.1f, 0.0f, 0.9f, 0.05f, 0.05f}).view({1, 2, 3}).log().requires_grad_(true);
  const torch::Tensor kl = anchor_kl(torch::log_softmax(policy_logits, -1), ref, mask);
  CHECK(kl.item<double>() == doctest::Approx(0.5 * std::log(0.5 / 0.9) + 0.5 * std::log(0.5 / 0.1)).epsilon(1e-5));
  CHECK(anchor_kl(ref, ref, mask).item<double>() == doctest::Approx(0.0));
  kl.backward();
  const torch::Tensor grad = policy_logits.grad();
  CHECK(grad[0][0][1].item<double>() < 0);  // descent raises the token the policy starved
  CHECK(grad[0][0][0].item<double>() > 0);
  CHECK(torch::isfinite(grad).all().item<bool>());
  CHECK(grad[0][1].abs().sum().item<double>() == doctest::Approx(0.0));  // masked position
  // As the policy drops a token the reference weights, the anchor grows without bound; the KL of
  // the sampled reply (here the favoured token) stays small.
  const torch::Tensor starved = torch::tensor({0.999999f, 0.000001f, 0.0f, 0.2f, 0.3f, 0.5f}).view({1, 2, 3}).log();
  CHECK(anchor_kl(starved, ref, mask).item<double>() > 6.0);
}

namespace {
/** A REINFORCE++ learner (no critic: the actor's update alone) over the tiny model in `dir`. */
void init_actor_only_learner(LearnerState& learner, const std::string& dir) {
  learner.estimator = Estimator::kReinforcePlusPlus;
  learner.actor = turnrl::agents::load_qwen2(dir, false, torch::kCPU);
  learner.critic = turnrl::agents::load_qwen2(dir, true, torch::kCPU);
  learner.actor_optimizer = std::make_unique<torch::optim::AdamW>(learner.actor->parameters(), torch::optim::AdamWOptions(1e-3));
  learner.critic_optimizer = std::make_unique<torch::optim::AdamW>(learner.critic->parameters(), torch::optim::AdamWOptions(1e-3));
}
}  // namespace

TEST_CASE("the trainer's update clips the actor's gradient norm") {
  const turnrl::test::TempDir run_dir("turnrl_clip_test");
  const std::string dir = run_dir / "model";
  turnrl::agents::write_new_model("tiny", dir, 3, "");
  for (const double max_norm : {1e-3, 1e6}) {
    LearnerState learner;
    learner.config.ppo.grad_clip = max_norm;
    learner.config.ppo.epochs = 1;
    learner.config.ppo.minibatch = 4;
    init_actor_only_learner(learner, dir);
    RolloutBatch batch;
    batch.n_env = 2;
    batch.e_len = 2;
    TrainingTargets targets;
    for (int i = 0; i < 4; ++i) {
      TurnRecord turn;
      turn.prompt_ids = {5, 6, 7 + i};
      turn.response_ids = {8, 9};
      batch.turns.push_back(turn);
      targets.old_logprobs.push_back({-5.0f, -5.0f});
      targets.advantages.push_back({3.0f, -2.0f});
      targets.old_values.emplace_back();
      targets.returns.emplace_back();
    }
    const nlohmann::json metrics = ppo_update(learner, batch, targets, true, batch.turns.size());
    double norm = 0;
    for (const auto& p : learner.actor->parameters()) {
      if (p.grad().defined()) norm += p.grad().pow(2).sum().item<double>();
    }
    INFO("max_norm " << max_norm);
    CHECK(metrics.at("grad_norm").get<double>() > 1e-2);  // the raw norm, before clipping
    if (max_norm < 1) {
      CHECK(std::sqrt(norm) <= doctest::Approx(max_norm).epsilon(1e-3));  // what the step used
    } else {
      CHECK(std::sqrt(norm) == doctest::Approx(metrics.at("grad_norm").get<double>()).epsilon(1e-3));  // untouched
    }
  }
}

TEST_CASE("the anchor term keeps a token that negative advantages push out") {
  const turnrl::test::TempDir run_dir("turnrl_anchor_test");
  const std::string dir = run_dir / "model";
  turnrl::agents::write_new_model("tiny", dir, 3, "");
  const std::vector<int32_t> prompt = {5, 6, 7};
  const std::vector<int32_t> response = {8};
  const auto token_logprob = [&](turnrl::agents::Qwen2Model& model) {
    torch::NoGradGuard no_grad;
    const auto rb = turnrl::agents::make_response_batch({prompt}, {response}, 0, torch::kCPU);
    return turnrl::agents::response_logprobs(model, rb, {8, 9})[0][0].item<double>();
  };
  std::map<double, double> after;
  for (const double coef : {0.0, 1.0}) {
    LearnerState learner;
    learner.config.ppo.epochs = 40;
    learner.config.ppo.minibatch = 4;
    learner.config.ppo.clip = 10.0;  // let the advantages act at full strength
    learner.config.ppo.anchor_kl_coef = coef;
    init_actor_only_learner(learner, dir);
    learner.reference = turnrl::agents::load_qwen2(dir, false, torch::kCPU);
    learner.allowed_tokens = {8, 9};  // two actions, each about half the reference's weight
    RolloutBatch batch;
    batch.n_env = 2;
    batch.e_len = 2;
    TrainingTargets targets;
    const double start = token_logprob(learner.actor);
    for (int i = 0; i < 4; ++i) {
      TurnRecord turn;
      turn.prompt_ids = prompt;
      turn.response_ids = response;
      batch.turns.push_back(turn);
      targets.old_logprobs.push_back({static_cast<float>(start)});
      targets.advantages.push_back({-1.0f});
      targets.old_values.emplace_back();
      targets.returns.emplace_back();
    }
    const nlohmann::json metrics = ppo_update(learner, batch, targets, true, batch.turns.size());
    CHECK(metrics.contains("anchor_kl") == (coef > 0));
    if (coef > 0) CHECK(metrics.at("anchor_kl").get<double>() > 0);
    after[coef] = token_logprob(learner.actor);
    INFO("anchor " << coef << ": log-prob " << start << " -> " << after[coef]);
    CHECK(after[coef] < start);
  }
  INFO("without the anchor " << after[0.0] << ", with it " << after[1.0]);
  CHECK(after[1.0] > after[0.0] + 1.0);
}

TEST_CASE("length-grouped mini-batches pad less and still train on every row") {
  const turnrl::test::TempDir run_dir("turnrl_group_test");
  const std::string dir = run_dir / "model";
  turnrl::agents::write_new_model("tiny", dir, 3, "");
  std::map<bool, double> padding;
  for (const bool grouped : {false, true}) {
    LearnerState learner;
    learner.config.ppo.epochs = 3;
    learner.config.ppo.minibatch = 4;
    learner.config.ppo.group_by_length = grouped;
    init_actor_only_learner(learner, dir);
    RolloutBatch batch;
    batch.n_env = 4;
    batch.e_len = 4;
    TrainingTargets targets;
    for (int i = 0; i < 16; ++i) {
      TurnRecord turn;
      turn.prompt_ids.assign(i % 2 == 0 ? 4 : 60, 5);  // short and long prompts interleaved
      turn.response_ids = {8, 9};
      batch.turns.push_back(turn);
      targets.old_logprobs.push_back({-5.0f, -5.0f});
      targets.advantages.push_back({1.0f, -1.0f});
      targets.old_values.emplace_back();
      targets.returns.emplace_back();
    }
    const torch::Tensor before = learner.actor->parameters().front().clone();
    const nlohmann::json metrics = ppo_update(learner, batch, targets, true, batch.turns.size());
    padding[grouped] = metrics.at("update_padding").get<double>();
    CHECK_FALSE(torch::equal(before, learner.actor->parameters().front()));
  }
  INFO("padding ungrouped " << padding[false] << ", grouped " << padding[true]);
  CHECK(padding[true] == doctest::Approx(0.0));  // each mini-batch holds rows of one length
  CHECK(padding[false] > 0.2);
}

TEST_CASE("a missing model folder without a preset is refused before any work starts, on stderr") {
  const turnrl::test::TempDir run_dir("turnrl_missing_model");
  const std::string command = std::string(TURNRL_BINARY) + " train --config " + write_config("g.yaml", "model:\n  path: /no/such/model\n") +
                              " >" + (run_dir / "out.txt") + " 2>" + (run_dir / "err.txt");
  CHECK(WEXITSTATUS(std::system(command.c_str())) == 1);
  std::ifstream err(run_dir / "err.txt"), out(run_dir / "out.txt");
  const std::string err_text((std::istreambuf_iterator<char>(err)), {}), out_text((std::istreambuf_iterator<char>(out)), {});
  CHECK(err_text.find("holds no model") != std::string::npos);
  CHECK(err_text.find('\n') == err_text.size() - 1);  // one line
  CHECK(out_text.find("holds no model") == std::string::npos);
}

TEST_CASE("a resumed run continues from the checkpoint's exact state") {
  const turnrl::test::TempDir run_dir("turnrl_resume_test");
  const std::string& root = run_dir.path();
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
  const nlohmann::json state = read_json(interrupted.run.out + "/checkpoint/state.json");
  size_t steps_in_flight = 0;
  for (const auto& slot : state.at("rollout").at("slots")) steps_in_flight += slot.at("replies").size();
  CHECK(steps_in_flight > 0);
  interrupted.run.iterations = 4;
  PpoTrainer(interrupted, interrupted.run.out + "/checkpoint").train();

  const auto expected = turnrl::test::deterministic_metrics(uninterrupted.run.out + "/metrics.jsonl");
  const auto resumed = turnrl::test::deterministic_metrics(interrupted.run.out + "/metrics.jsonl");
  for (const std::string key : {"train/3", "train/4", "eval/4"}) {
    INFO(key);
    REQUIRE(expected.count(key) == 1);
    REQUIRE(resumed.count(key) == 1);
    CHECK(resumed.at(key).dump() == expected.at(key).dump());
  }
  // A mix's train lines split the finished episodes by task.
  double task_episodes = 0, episodes = 0;
  for (const nlohmann::json& line : metrics_of_type(uninterrupted.run.out + "/metrics.jsonl", "train")) {
    const nlohmann::json& tasks = line.at("task_success");
    REQUIRE(tasks.size() == 2u);
    task_episodes += tasks.at("babyai/goto").at("episodes").get<double>() + tasks.at("babyai/open").at("episodes").get<double>();
    episodes += line.at("episodes").get<double>();
  }
  CHECK(task_episodes == episodes);
  // Later turns depend on the restored episodes: their losses must differ from the first iterations'.
  CHECK(expected.at("train/3")["value_loss"] != expected.at("train/1")["value_loss"]);
  // No iteration twice in the resumed file, even after lines past the checkpoint (a crash after it).
  std::map<std::string, int> seen;
  std::ifstream lines(interrupted.run.out + "/metrics.jsonl");
  for (std::string text; std::getline(lines, text);) {
    const nlohmann::json line = nlohmann::json::parse(text);
    if (line.contains("iteration")) CHECK(++seen[line["type"].get<std::string>() + "/" + std::to_string(line["iteration"].get<int>())] == 1);
  }
}

TEST_CASE("run.total_minutes counts the time before PPO: a budget the format stage and loading use up leaves no iteration") {
  const turnrl::test::TempDir run_dir("turnrl_total_minutes_test");
  const std::string& root = run_dir.path();
  const std::string yaml = "model:\n  path: " + root + "/model\n  preset: tiny\n  threads: 1\n"
                           "env:\n  id: babyai/goto\n  n_env: 2\n  e_len: 3\n"
                           "ppo:\n  minibatch: 6\n  epochs: 1\n  critic_warmup_iterations: 0\n"
                           "run:\n  iterations: 2\n  total_minutes: 60\n  eval_every: 2\n  eval_episodes: 1\n";
  TrainConfig config = TrainConfig::load(write_config("total_minutes.yaml", yaml));
  CHECK(config.run.total_minutes == 60.0);
  config.run.out = root + "/ample";
  PpoTrainer(config, "").train();
  CHECK(read_json(config.run.out + "/checkpoint/state.json").at("iteration") == 2);

  // Loading the models alone takes longer than this budget.
  config.run.out = root + "/spent";
  config.run.total_minutes = 1e-7;
  PpoTrainer(config, "").train();
  const nlohmann::json state = read_json(config.run.out + "/checkpoint/state.json");
  CHECK(state.at("iteration") == 0);
  CHECK(state.at("setup_seconds").get<double>() > 6e-6);
  CHECK(std::filesystem::exists(config.run.out + "/model/config.json"));
}

TEST_CASE("resume cuts metrics back to the checkpoint and finds the previous checkpoint after an interrupted swap") {
  const turnrl::test::TempDir run_dir("turnrl_swap_test");
  const std::string& root = run_dir.path();
  std::filesystem::create_directories(root + "/checkpoint.old");
  std::ofstream(root + "/checkpoint.old/state.json") << "{}";
  CHECK(find_checkpoint(root) == root + "/checkpoint.old");  // a swap died between its two renames
  std::filesystem::create_directories(root + "/checkpoint");
  std::ofstream(root + "/checkpoint/state.json") << "{}";
  CHECK(find_checkpoint(root) == root + "/checkpoint");
  CHECK(find_checkpoint(root + "/checkpoint/") == root + "/checkpoint");
  CHECK_THROWS_AS(find_checkpoint(root + "/nothing"), std::invalid_argument);
  std::ofstream(root + "/metrics.jsonl") << R"({"type":"train","iteration":1,"minutes":0.1})" "\n"
                                         << R"({"type":"eval","iteration":2,"minutes":0.2})" "\n"
                                         << R"({"type":"train","iteration":3,"minutes":0.3})" "\n"
                                         << R"({"type":"train","itera)";
  truncate_metrics(root + "/metrics.jsonl", 2);
  std::ifstream in(root + "/metrics.jsonl");
  const std::string kept((std::istreambuf_iterator<char>(in)), {});
  CHECK(kept == R"({"type":"train","iteration":1,"minutes":0.1})" "\n" R"({"type":"eval","iteration":2,"minutes":0.2})" "\n");
}

TEST_CASE("a run is a model: the final state is saved, and eval --run scores it as the trainer's evaluation does") {
  const turnrl::test::TempDir run_dir("turnrl_run_model_test");
  const std::string& root = run_dir.path();
  // 3 iterations with checkpoint_every 2: the final iteration must still be saved.
  const std::string yaml = "model:\n  path: " + root + "/base\n  preset: tiny\n  threads: 1\n"
                           "env:\n  id: [babyai/goto, babyai/open]\n  n_env: 4\n  e_len: 3\n"
                           "turn:\n  layout: compact\n  history: 1\n  reply_format: action-tag\n  invalid_feedback: false\n"
                           "ppo:\n  minibatch: 6\n  epochs: 1\n"
                           "run:\n  iterations: 3\n  checkpoint_every: 2\n  eval_every: 10\n  eval_episodes: 3\n"
                           "  eval_decoding: sampled\n  final_eval_seed: 9000\n  final_eval_episodes: 5\n  out: " + root + "/run\n";
  const TrainConfig config = TrainConfig::load(write_config("run_model.yaml", yaml));
  PpoTrainer(config, "").train();
  CHECK(read_json(root + "/run/checkpoint/state.json").at("iteration") == 3);
  for (const char* file : {"config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json", "generation_config.json"}) {
    INFO(file);
    CHECK(std::filesystem::exists(root + "/run/model/" + file));
    CHECK(std::filesystem::exists(root + "/run/checkpoint/actor/" + file));
  }
  CHECK(latest_model(root + "/run") == root + "/run/model");

  const auto scored = turnrl::test::run_turnrl("eval --run " + root + "/run --seeds 7000:6 --out " + root + "/eval");
  REQUIRE_MESSAGE(scored.exit_code == 0, scored.output);
  std::ifstream summary_file(root + "/eval/summary.json");
  const nlohmann::json summary = nlohmann::json::parse(summary_file);
  // The trainer's evaluation code path on the same model, settings and seeds.
  const TrainConfig run = TrainConfig::load(run_config_path(root + "/run"));
  const auto agent = make_policy_agent(turnrl::agents::LanguageModel::load(latest_model(root + "/run")), run, true);
  const std::vector<TaskScore> direct = evaluate({run.env.ids, run.env.options, run.turn, 7000, 6}, *agent);
  REQUIRE(direct.size() == 2u);
  for (const TaskScore& score : direct) {
    INFO(score.task);
    CHECK(summary.at("tasks").at(score.task).at("episodes") == 6);
    CHECK(summary.at("tasks").at(score.task).at("success").get<double>() == doctest::Approx(score.success));
    CHECK(summary.at("tasks").at(score.task).at("progression").get<double>() == doctest::Approx(score.progression));
  }
  CHECK(summary.at("decoding") == "greedy");
  // --sampled: the run's training sampling, seeded by the run's seed, through the same path.
  const auto sampled = turnrl::test::run_turnrl("eval --run " + root + "/run --seeds 7000:6 --sampled --out " + root + "/eval-sampled");
  REQUIRE_MESSAGE(sampled.exit_code == 0, sampled.output);
  std::ifstream sampled_file(root + "/eval-sampled/summary.json");
  const nlohmann::json sampled_summary = nlohmann::json::parse(sampled_file);
  CHECK(sampled_summary.at("decoding").get<std::string>().rfind("sampled", 0) == 0);
  const auto sampler = make_policy_agent(turnrl::agents::LanguageModel::load(latest_model(root + "/run")), run, false, run.run.seed);
  for (const TaskScore& score : evaluate({run.env.ids, run.env.options, run.turn, 7000, 6}, *sampler)) {
    INFO(score.task);
    CHECK(sampled_summary.at("tasks").at(score.task).at("progression").get<double>() == doctest::Approx(score.progression));
    CHECK(sampled_summary.at("tasks").at(score.task).at("success").get<double>() == doctest::Approx(score.success));
  }
  // The run's own final evaluation (eval_decoding: sampled) is that sampling on its evaluation seeds.
  const std::vector<nlohmann::json> evals = metrics_of_type(root + "/run/metrics.jsonl", "eval");
  REQUIRE(!evals.empty());
  CHECK(evals.back().at("iteration") == 3);
  CHECK(evals.back().at("decoding") == "sampled");
  const std::vector<TaskScore> at_eval_seeds = evaluate({run.env.ids, run.env.options, run.turn, run.run.eval_seed, 3}, *sampler);
  for (const TaskScore& score : at_eval_seeds) {
    INFO(score.task);
    CHECK(evals.back().at("tasks").at(score.task).at("progression").get<double>() == doctest::Approx(score.progression));
  }
  // Without keep_best, final_eval_episodes still scores the run's model (the last actor) once more,
  // on its own block of seeds, sampled as the run's evaluations are.
  const std::vector<nlohmann::json> finals = metrics_of_type(root + "/run/metrics.jsonl", "final");
  REQUIRE(finals.size() == 1u);
  CHECK(finals[0].at("iteration") == 3);
  CHECK(finals[0].at("episodes") == 5);
  CHECK(finals[0].at("first_seed") == 9000);
  for (const TaskScore& score : evaluate({run.env.ids, run.env.options, run.turn, 9000, 5}, *sampler)) {
    INFO(score.task);
    CHECK(finals[0].at("tasks").at(score.task).at("progression").get<double>() == doctest::Approx(score.progression));
    CHECK(finals[0].at("tasks").at(score.task).at("episodes") == 5);
  }
  const auto generated = turnrl::test::run_turnrl("generate --model " + root + "/run/model --prompt 'go to the red ball' --max-new-tokens 4");
  CHECK_MESSAGE(generated.exit_code == 0, generated.output);
  // An interrupted run saves too: SIGTERM lets the iteration in flight finish, then saves.
  const std::string command = "timeout --preserve-status -s TERM 12 " + std::string(TURNRL_BINARY) + " train --config " +
                              write_config("run_model.yaml", yaml) + " --iterations 100000 --out " + root + "/stopped > " + root +
                              "/stopped.log 2>&1";
  CHECK(WEXITSTATUS(std::system(command.c_str())) == 0);
  CHECK(read_json(root + "/stopped/checkpoint/state.json").at("iteration").get<int>() >= 1);
  CHECK(std::filesystem::exists(root + "/stopped/model/model.safetensors"));
  CHECK(metrics_of_type(root + "/stopped/metrics.jsonl", "final").empty());  // a stopped run skips its final evaluation
}

TEST_CASE("scores_json: progression's standard error per task, and overall clustered by seed") {
  // Two tasks on three seeds: A = (1, 0, 1), B = (0, 0, 1).
  TaskScore a, b;
  a.task = "a", a.episodes = 3, a.progression = 2.0 / 3, a.episode_progression = {1, 0, 1};
  b.task = "b", b.episodes = 3, b.progression = 1.0 / 3, b.episode_progression = {0, 0, 1};
  const nlohmann::json scores = scores_json({a, b});
  // Per task: sample variance 1/3, over 3 episodes: sqrt(1/9).
  CHECK(scores["tasks"]["a"]["progression_se"].get<double>() == doctest::Approx(1.0 / 3));
  CHECK(scores["tasks"]["b"]["progression_se"].get<double>() == doctest::Approx(1.0 / 3));
  // Overall: per seed, the summed deviations from the task means are 0, -1, +1, so
  // sqrt(3/2 * 2) / (2 tasks * 3 seeds); independent episodes would give sqrt(1/9 + 1/9) / 2.
  CHECK(scores["overall"]["progression"].get<double>() == doctest::Approx(0.5));
  CHECK(scores["overall"]["progression_se"].get<double>() == doctest::Approx(std::sqrt(3.0) / 6));
  // Seeds that move every task together widen it: B = A gives twice A's deviations per seed.
  const nlohmann::json alike = scores_json({a, a});
  CHECK(alike["overall"]["progression_se"].get<double>() == doctest::Approx(1.0 / 3));
  TaskScore short_task = b;
  short_task.episode_progression.pop_back();
  CHECK_THROWS_AS(scores_json({a, short_task}), std::invalid_argument);
}

TEST_CASE("keep_best: the run's model is its actor of highest evaluated progression, not its last") {
  const turnrl::test::TempDir run_dir("turnrl_keep_best_test");
  const std::string& root = run_dir.path();
  const std::string yaml = "model:\n  path: " + root + "/base\n  preset: tiny\n  threads: 1\n"
                           "env:\n  id: babaisai/goto_win\n  n_env: 4\n  e_len: 3\n"
                           "turn:\n  layout: compact\n  reply_format: action-tag\n  invalid_feedback: false\n"
                           "ppo:\n  minibatch: 6\n  epochs: 1\n  actor_lr: 1.0e-2\n  critic_warmup_iterations: 0\n"
                           "run:\n  iterations: 4\n  eval_every: 1\n  eval_episodes: 4\n  eval_decoding: sampled\n"
                           "  keep_best: true\n  final_eval_seed: 300000\n  final_eval_episodes: 6\n  out: " + root + "/run\n";
  // A stale best from an earlier run in the same folder must not survive a fresh run.
  std::filesystem::create_directories(root + "/run/best");
  std::ofstream(root + "/run/best/best.json") << R"({"iteration": 9, "progression": 2.0})";
  PpoTrainer(TrainConfig::load(write_config("keep_best.yaml", yaml)), "").train();

  const std::vector<nlohmann::json> evals = metrics_of_type(root + "/run/metrics.jsonl", "eval");
  REQUIRE(evals.size() == 5u);  // iterations 0..4
  double best_progression = -1;
  int best_iteration = -1;
  for (const nlohmann::json& line : evals) {
    const double progression = line.at("progression");
    INFO("iteration " << line.at("iteration"));
    CHECK(line.value("best", false) == (progression > best_progression));
    if (progression > best_progression) best_progression = progression, best_iteration = line.at("iteration");
  }
  const nlohmann::json record = nlohmann::json::parse(std::ifstream(root + "/run/model/best.json"));
  CHECK(record.at("iteration") == best_iteration);
  CHECK(record.at("progression").get<double>() == doctest::Approx(best_progression));
  auto bytes = [](const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
  };
  const std::string model = bytes(root + "/run/model/model.safetensors");
  CHECK(model == bytes(root + "/run/best/model.safetensors"));
  // The last actor stays in the checkpoint; the update at 1e-2 moves it off the best one.
  if (best_iteration != 4) CHECK(model != bytes(root + "/run/checkpoint/actor/model.safetensors"));
  CHECK(latest_model(root + "/run") == root + "/run/model");

  // The kept actor is scored once more on seeds that did not choose it: the run's model, sampled as
  // the run samples, on final_eval_seed's block (goto_win's episode lengths tell the actors apart).
  const TrainConfig run = TrainConfig::load(root + "/run/config.yaml");
  const std::vector<nlohmann::json> finals = metrics_of_type(root + "/run/metrics.jsonl", "final");
  REQUIRE(finals.size() == 1u);
  CHECK(finals[0].at("iteration") == best_iteration);
  CHECK(finals[0].at("first_seed") == 300000);
  CHECK(finals[0].at("episodes") == 6);  // final_eval_episodes, not the periodic evaluations' 4
  auto sampled_scores = [&](const std::string& model) {
    const auto sampler = make_policy_agent(turnrl::agents::LanguageModel::load(model), run, false, run.run.seed);
    return evaluate({run.env.ids, run.env.options, run.turn, 300000, 6}, *sampler).at(0);
  };
  const TaskScore kept = sampled_scores(root + "/run/model");
  CHECK(finals[0].at("progression").get<double>() == doctest::Approx(kept.progression));
  CHECK(finals[0].at("mean_length").get<double>() == doctest::Approx(kept.mean_length));
  if (best_iteration != 4) {
    const TaskScore last = sampled_scores(root + "/run/checkpoint/actor");
    CHECK((last.mean_length != kept.mean_length || last.progression != kept.progression));
  }
}

TEST_CASE("a group estimator trains without the critic on groups sharing their start state") {
  const turnrl::test::TempDir run_dir("turnrl_group_test");
  const std::string& root = run_dir.path();
  const std::string yaml = "model:\n  path: " + root + "/model\n  preset: tiny\n  threads: 1\n"
                           "env:\n  id: [babyai/goto, babyai/open]\n  n_env: 8\n  e_len: 4\n  group_size: 2\n"
                           "ppo:\n  estimator: grpo\n  minibatch: 8\n  epochs: 1\n  critic_warmup_iterations: 1\n"
                           "run:\n  iterations: 2\n  checkpoint_every: 2\n  eval_every: 2\n  eval_episodes: 1\n  out: " + root + "/run\n";
  PpoTrainer(TrainConfig::load(write_config("group.yaml", yaml)), "").train();
  CHECK(metrics_of_type(root + "/run/metrics.jsonl", "critic_warmup").empty());  // no critic to warm up
  const std::vector<nlohmann::json> train = metrics_of_type(root + "/run/metrics.jsonl", "train");
  for (const nlohmann::json& line : train) {
    CHECK_FALSE(line.contains("value_loss"));
    CHECK(std::isfinite(line["policy_loss"].get<double>()));
  }
  CHECK(train.size() == 2u);
}

TEST_CASE("the action vocabulary refuses an action the reply limit cannot spell") {
  const auto tokenizer = turnrl::agents::Tokenizer::load(turnrl::test::shared_path("tokenizers/qwen"));
  TrainConfig c;
  c.env.ids = {"crafter/balrog"};
  c.sampling.action_tokens_only = true;
  c.sampling.max_response_tokens = 1;  // Qwen spells "Move West" in more than one token
  CHECK_THROWS_WITH_AS(action_vocabulary(c, tokenizer), doctest::Contains("more than sampling.max_response_tokens (1)"),
                       std::invalid_argument);
  c.sampling.max_response_tokens = 4;
  CHECK(action_vocabulary(c, tokenizer).size() > 17);
}

TEST_CASE("action tokens: the tokenizer's text ends and the parser's offset agree on a real tokenizer") {
  const auto tokenizer = turnrl::agents::Tokenizer::load(turnrl::test::shared_path("tokenizers/qwen"));
  const std::string reply = "THINK: the key is ahead. ACTION: maybe\nACTION: go forward";
  const std::vector<int32_t> ids = tokenizer.encode(reply);
  std::vector<uint32_t> ends;
  REQUIRE(tokenizer.decode(ids, &ends) == reply);
  REQUIRE(ends.size() == ids.size());
  const auto env = turnrl::envs::make_env("babyai/goto");
  std::mt19937_64 rng(0);
  const auto parsed = turnrl::envs::parse_reply(reply, *env, turnrl::envs::ReplyFormat::kActionTag, rng);
  REQUIRE(parsed.has_marker);
  const int start = action_token_start(ends, parsed.action_begin);
  REQUIRE(start > 0);
  REQUIRE(start < static_cast<int>(ids.size()));
  const std::string before = tokenizer.decode({ids.begin(), ids.begin() + start});
  CHECK(before.size() >= before.rfind("ACTION:") + 7);
  CHECK(before.find("go") == std::string::npos);
  CHECK(tokenizer.decode({ids.begin() + start, ids.end()}).find("go forward") != std::string::npos);
}

TEST_CASE("each layout runs through train, eval --run and play --run with the run's own turn settings") {
  const turnrl::test::TempDir run_dir("turnrl_layout_test");
  const std::string& root = run_dir.path();
  struct Case {
    std::string layout, first_role, marker;
  };
  const Case cases[] = {{"balrog", "user", "You always have to output one of the above actions"},
                        {"verlog", "system", "Please respond in the following format"},
                        {"compact", "user", "<|im_start|>user\ngo to the"}};
  for (const Case& c : cases) {
    INFO(c.layout);
    const std::string run = root + "/" + c.layout;
    const std::string yaml = "model:\n  path: " + root + "/base\n  preset: tiny\n  threads: 1\n"
                             "env:\n  id: babyai/goto\n  n_env: 2\n  e_len: 2\n"
                             "turn:\n  layout: " + c.layout + "\n  history: 1\n  reply_format: action-tag\n"
                             "ppo:\n  minibatch: 4\n  epochs: 1\n"
                             "run:\n  iterations: 1\n  eval_every: 10\n  eval_episodes: 1\n  out: " + run + "\n";
    PpoTrainer(TrainConfig::load(write_config("layout-" + c.layout + ".yaml", yaml)), "").train();
    CHECK(TrainConfig::load(run_config_path(run)).turn.layout == TrainConfig::load(write_config("l2.yaml", yaml)).turn.layout);
    const auto scored = turnrl::test::run_turnrl("eval --run " + run + " --seeds 3:1 --out " + run + "-eval");
    REQUIRE_MESSAGE(scored.exit_code == 0, scored.output);
    std::ifstream episodes(run + "-eval/episodes.jsonl");
    std::string line;
    REQUIRE(std::getline(episodes, line));
    const nlohmann::json prompt = nlohmann::json::parse(line).at("turns").at(0).at("prompt");
    CHECK(prompt.at(0).at("role") == c.first_role);
    std::string text;
    for (const auto& message : prompt) text += "<|im_start|>" + message.at("role").get<std::string>() + "\n" + message.at("content").get<std::string>();
    if (c.layout != "compact") CHECK(text.find(c.marker) != std::string::npos);
    const auto played = turnrl::test::run_turnrl("play --run " + run + " --seed 3", ":quit\n");
    REQUIRE_MESSAGE(played.exit_code == 0, played.output);
    CHECK(played.output.find(c.marker) != std::string::npos);
    CHECK(played.output.find("<|im_start|>" + c.first_role + "\n") != std::string::npos);
  }
}

TEST_CASE("GiGPO with the episode reward manager trains on anchor states the rollout records") {
  const turnrl::test::TempDir run_dir("turnrl_gigpo_test");
  const std::string& root = run_dir.path();
  const std::string yaml = "model:\n  path: " + root + "/model\n  preset: tiny\n  threads: 1\n"
                           "env:\n  id: corridor/short\n  n_env: 8\n  e_len: 6\n  group_size: 4\n"
                           "turn:\n  layout: compact\n  history: 0\n  reply_format: action-tag\n  invalid_penalty: -0.1\n  invalid_feedback: false\n"
                           "ppo:\n  estimator: gigpo\n  minibatch: 16\n  epochs: 1\n"
                           "reward:\n  manager: episode\n"
                           "run:\n  iterations: 3\n  checkpoint_every: 3\n  eval_every: 3\n  eval_episodes: 2\n  out: " + root + "/run\n";
  const TrainConfig config = TrainConfig::load(write_config("gigpo.yaml", yaml));
  CHECK(config.reward.manager == TrainConfig::Reward::Manager::kEpisode);
  PpoTrainer(config, "").train();
  const std::vector<nlohmann::json> train = metrics_of_type(root + "/run/metrics.jsonl", "train");
  for (const nlohmann::json& line : train) {
    CHECK_FALSE(line.contains("value_loss"));
    CHECK(std::isfinite(line["policy_loss"].get<double>()));
  }
  CHECK(train.size() == 3u);
  // The episode manager's open episodes travel with the checkpoint.
  CHECK(read_json(root + "/run/checkpoint/state.json").at("reward_manager").contains("open_episodes"));
}

TEST_CASE("dynamic sampling drops groups without signal and refills within its tries") {
  const turnrl::test::TempDir run_dir("turnrl_dynamic_test");
  const std::string& root = run_dir.path();
  // The untrained policy finishes corridor/short only now and then: groups whose segments all got
  // the same reward are dropped, the others kept.
  const std::string yaml = "model:\n  path: " + root + "/model\n  preset: tiny\n  threads: 1\n"
                           "env:\n  id: corridor/short\n  n_env: 8\n  e_len: 6\n  group_size: 4\n"
                           "turn:\n  layout: compact\n  history: 0\n  reply_format: action-tag\n  invalid_feedback: false\n"
                           "ppo:\n  estimator: grpo\n  minibatch: 8\n  epochs: 1\n"
                           "reward:\n  manager: episode\n  dynamic_sampling_tries: 3\n"
                           "run:\n  iterations: 2\n  eval_every: 10\n  eval_episodes: 1\n  out: " + root + "/run\n";
  PpoTrainer(TrainConfig::load(write_config("dynamic.yaml", yaml)), "").train();
  const std::vector<nlohmann::json> train = metrics_of_type(root + "/run/metrics.jsonl", "train");
  size_t all_dropped = 0, all_kept = 0;
  for (const nlohmann::json& line : train) {
    const int tries = line.at("sampling_tries");
    const size_t wanted = line.at("groups_wanted"), kept = line.at("groups_kept"), dropped = line.at("groups_dropped");
    CHECK(tries >= 1);
    CHECK(tries <= 3);
    CHECK(wanted >= 2u);  // a collection has at least n_env / group_size groups
    CHECK(kept <= wanted);
    if (kept < wanted) CHECK(tries == 3);  // refilled until the tries ran out
    if (tries < 3) CHECK(kept == wanted);  // stopped early only when the batch was full
    // Only kept groups are trained on: a group is the segments of one start state in one
    // collection, at most its 4 slots x 6 turns.
    CHECK(line.at("turns").get<size_t>() <= kept * 4 * 6);
    CHECK((line.at("turns").get<size_t>() > 0u) == (kept > 0u));
    all_dropped += dropped;
    all_kept += kept;
  }
  CHECK(train.size() == 2u);
  CHECK(all_dropped > 0u);
  CHECK(all_kept > 0u);
}

TEST_CASE("process rewards and an external scorer in training: streamed while the batch generates") {
  const turnrl::test::TempDir run_dir("turnrl_process_test");
  const std::string& root = run_dir.path();
  // The stub scores every turn with its env reward; the episode manager uses those scores as they are.
  turnrl::serve::StubHttpServer scorer([](int, const std::string&, const nlohmann::json& request) {
    nlohmann::json scores = nlohmann::json::array();
    for (const auto& turn : request["turns"]) scores.push_back(turn["env_reward"]);
    return turnrl::serve::StubReply{200, {{"scores", scores}}, 5};
  });
  const std::string yaml = "model:\n  path: " + root + "/model\n  preset: tiny\n  threads: 1\n"
                           "env:\n  id: arith/single\n  options: {steps: 1, max_value: 20}\n  n_env: 8\n  e_len: 2\n  group_size: 4\n"
                           "turn:\n  layout: compact\n  history: 0\n  reply_format: action-tag\n  invalid_feedback: false\n"
                           "sampling:\n  max_response_tokens: 6\n  extra_tokens: [So, Action, .]\n"
                           "ppo:\n  estimator: rloo\n  minibatch: 8\n  epochs: 1\n"
                           "reward:\n  manager: [episode, process]\n  process:\n    markers: ['So ']\n    answer_prompt: Action\n"
                           "  scorer:\n    url: " + scorer.url("/score") + "\n    concurrency: 2\n"
                           "run:\n  iterations: 2\n  eval_every: 10\n  eval_episodes: 1\n  out: " + root + "/run\n";
  PpoTrainer(TrainConfig::load(write_config("process.yaml", yaml)), "").train();
  const std::vector<nlohmann::json> train = metrics_of_type(root + "/run/metrics.jsonl", "train");
  REQUIRE(train.size() == 2u);
  for (const nlohmann::json& line : train) {
    CHECK(std::isfinite(line["policy_loss"].get<double>()));
    CHECK(line["process_abs_mean"].get<double>() > 0.0);  // replies were segmented and valued
    CHECK(line["process_s"].get<double>() > 0.0);
    CHECK(line["scorer_s"].get<double>() > 0.0);
    CHECK(line.contains("reward_wait_s"));
  }
  CHECK(scorer.requests() == 2 * 8 * 2);  // one request per episode (arith/single: one turn each)
}
