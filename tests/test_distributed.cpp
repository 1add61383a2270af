// Data-parallel training over torch c10d (Gloo over a TCPStore on loopback): two ranks take the
// step one process takes on their combined batch, and two-rank runs resume from their checkpoints.
#include "torch_doctest.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <map>
#include <set>

#include <nlohmann/json.hpp>

#include "agents/model/language_model.h"
#include "agents/model/model_presets.h"
#include "agents/model/new_model.h"
#include "envs/registry.h"
#include "rank_threads.h"
#include "temp_dir.h"
#include "test_util.h"
#include "train_test_util.h"
#include "trainer/dist/distributed.h"
#include "trainer/rollout/policy_agent.h"
#include "trainer/algo/ppo_update.h"
#include "trainer/rewards/reward_stage.h"
#include "trainer/rollout/rollout.h"
#include "trainer/algo/targets.h"

using namespace turnrl::trainer;
using turnrl::test::read_json;
using turnrl::test::run_turnrl;

namespace {

constexpr int kSlotsPerRank = 4;

/** A tiny model with its own lm_head: the critic never uses it, so its gradient stays undefined. */
std::string untied_tiny_model(const std::string& root) {
  const std::string tied = root + "/tied", untied = root + "/untied";
  turnrl::agents::write_new_model("tiny", tied, 5, "");
  turnrl::agents::ModelConfig config = turnrl::agents::preset_config("tiny");
  config.tie_word_embeddings = false;
  torch::manual_seed(6);
  turnrl::agents::Qwen2Model model(config, false);
  turnrl::agents::save_qwen2(model, untied, tied);
  return untied;
}

TrainConfig learner_config(const std::string& model, const std::string& estimator) {
  TrainConfig c;
  c.model.path = model;
  c.model.threads = 1;
  c.env.ids = {"babyai/goto", "babyai/open"};
  c.env.n_env = kSlotsPerRank;
  c.env.e_len = 3;
  c.env.group_size = 2;
  c.ppo.estimator = parse_estimator(estimator);
  c.ppo.minibatch = 5;  // 24 combined rows: mini-batches of 5 and 4, split unevenly over the ranks
  c.ppo.epochs = 2;
  c.ppo.weight_decay = 0.01;  // moves any parameter that wrongly gets a zero gradient
  c.run.seed = 11;
  return c;
}

/** The trainer's learner: models from `c.model.path`, AdamW, the shuffle stream from the seed. */
LearnerState make_learner(const TrainConfig& c) {
  LearnerState l;
  l.config = c;
  torch::manual_seed(c.run.seed);
  l.actor = turnrl::agents::load_qwen2(c.model.path, false, torch::kCPU);
  l.critic = turnrl::agents::load_qwen2(c.model.path, true, torch::kCPU);
  l.reference = turnrl::agents::load_qwen2(c.model.path, false, torch::kCPU);
  for (auto& p : l.reference->parameters()) p.set_requires_grad(false);
  const auto adamw = [&](turnrl::agents::Qwen2Model& m, double lr) {
    return std::make_unique<torch::optim::AdamW>(m->parameters(), torch::optim::AdamWOptions(lr).weight_decay(c.ppo.weight_decay).eps(1e-5));
  };
  l.actor_optimizer = adamw(l.actor, c.ppo.actor_lr);
  l.critic_optimizer = adamw(l.critic, c.ppo.critic_lr);
  l.shuffle_rng.seed(c.run.seed);
  l.estimator = c.ppo.estimator;
  l.reward_manager = rewards::make_reward_manager(enum_name(c.reward.manager), false);
  const auto tokenizer = turnrl::agents::Tokenizer::load(c.model.path);
  l.allowed_tokens = action_vocabulary(c, tokenizer);
  l.pad_id = tokenizer.pad_id();
  return l;
}

/** One collection of the run's slots first_slot .. first_slot + n_slots - 1 (of 2 x kSlotsPerRank). */
RolloutBatch collect(const TrainConfig& c, turnrl::agents::Agent& agent, int first_slot, int n_slots) {
  RolloutConfig rc;
  rc.n_env = n_slots;
  rc.e_len = c.env.e_len;
  rc.seed = c.run.seed;
  rc.first_episode_seed = 1'000'000;
  rc.group_size = c.env.group_size;
  rc.first_slot = first_slot;
  rc.run_slots = 2 * kSlotsPerRank;
  Rollout rollout(
      [&c](int slot) { return turnrl::envs::make_env(c.env.ids[static_cast<size_t>(slot / c.env.group_size) % c.env.ids.size()]); },
      agent, rc);
  return rollout.collect();
}

/** Rewards of both kinds on every rank (the untrained policy rarely earns one in three turns): a
 *  process reward on each turn, an outcome on the last turn of every other slot. */
void give_rewards(RolloutBatch& batch) {
  for (TurnRecord& turn : batch.turns) turn.reward = 0.25 * ((turn.slot * 7 + turn.turn_index * 3) % 5) - 0.5;
  for (int i = 0; i < batch.n_env; i += 2) {
    TurnRecord& last = batch.turns[static_cast<size_t>(batch.e_len - 1) * batch.n_env + i];
    last.terminated = true;
    last.reward += 1.0 + 0.1 * last.slot;
    batch.bootstrap[i].reset();
  }
}

/** The ranks' collections side by side: one collection of all their slots. */
RolloutBatch side_by_side(const std::vector<RolloutBatch>& parts) {
  RolloutBatch out;
  out.e_len = parts.front().e_len;
  for (const RolloutBatch& part : parts) out.n_env += part.n_env;
  for (int t = 0; t < out.e_len; ++t) {
    for (const RolloutBatch& part : parts) {
      for (int i = 0; i < part.n_env; ++i) out.turns.push_back(part.at(t, i));
    }
  }
  for (const RolloutBatch& part : parts) out.bootstrap.insert(out.bootstrap.end(), part.bootstrap.begin(), part.bootstrap.end());
  return out;
}

double max_abs_difference(turnrl::agents::Qwen2Model& a, turnrl::agents::Qwen2Model& b) {
  const auto pa = a->named_parameters(), pb = b->named_parameters();
  double most = 0.0;
  for (const auto& item : pa) most = std::max(most, (item.value() - pb[item.key()]).abs().max().item<double>());
  return most;
}

/** Targets and one update of each rank on its own collection, the ranks (threads) joined by Gloo. */
void update_as_ranks(std::vector<LearnerState>& ranks, const std::vector<RolloutBatch>& batches) {
  turnrl::test::run_as_ranks(static_cast<int>(ranks.size()), [&](const std::shared_ptr<ProcessGroup>& group) {
    const size_t r = static_cast<size_t>(group->rank());
    LearnerState& l = ranks[r];
    l.ranks = group;
    const TrainingTargets targets = compute_targets(l, batches[r], assign_token_rewards(*l.reward_manager, batches[r]));
    ppo_update(l, batches[r], targets, true, std::numeric_limits<size_t>::max());
  });
}

void update_alone(LearnerState& l, const RolloutBatch& batch) {
  const TrainingTargets targets = compute_targets(l, batch, assign_token_rewards(*l.reward_manager, batch));
  ppo_update(l, batch, targets, true, std::numeric_limits<size_t>::max());
}

}  // namespace

TEST_CASE("two ranks take the update one process takes on their combined batch") {
  const turnrl::test::TempDir run_dir("turnrl_dp_equal_test");
  const std::string& root = run_dir.path();
  const std::string model = untied_tiny_model(root);
  for (const std::string estimator : {"gae", "reinforce++", "grpo"}) {
    CAPTURE(estimator);
    const TrainConfig c = learner_config(model, estimator);
    const auto sampler = make_policy_agent(turnrl::agents::LanguageModel::load(model), c, false, c.run.seed);
    std::vector<RolloutBatch> batches = {collect(c, *sampler, 0, kSlotsPerRank), collect(c, *sampler, kSlotsPerRank, kSlotsPerRank)};
    const RolloutBatch combined = side_by_side(batches);

    // The ranks play the episodes one process with all the slots plays: same ids and seeds, none shared.
    const RolloutBatch one_process = collect(c, *sampler, 0, 2 * kSlotsPerRank);
    std::set<uint64_t> seeds[2];
    for (size_t i = 0; i < combined.turns.size(); ++i) {
      CHECK(combined.turns[i].slot == one_process.turns[i].slot);
      CHECK(combined.turns[i].episode_id == one_process.turns[i].episode_id);
      CHECK(combined.turns[i].episode_seed == one_process.turns[i].episode_seed);
      seeds[combined.turns[i].slot / kSlotsPerRank].insert(combined.turns[i].episode_seed);
    }
    for (uint64_t seed : seeds[0]) CHECK(seeds[1].count(seed) == 0);
    for (RolloutBatch& batch : batches) give_rewards(batch);
    const RolloutBatch rewarded = side_by_side(batches);

    LearnerState single = make_learner(c);
    update_alone(single, rewarded);
    std::vector<LearnerState> ranks;
    for (int r = 0; r < 2; ++r) ranks.push_back(make_learner(c));
    update_as_ranks(ranks, batches);

    LearnerState untouched = make_learner(c);
    CHECK(max_abs_difference(single.actor, untouched.actor) > 1e-4);  // the update moved the weights
    if (single.uses_critic()) CHECK(max_abs_difference(single.critic, untouched.critic) > 1e-4);
    double actor = 0, critic = 0;
    for (LearnerState& rank : ranks) {
      actor = std::max(actor, max_abs_difference(rank.actor, single.actor));
      critic = std::max(critic, max_abs_difference(rank.critic, single.critic));
    }
    MESSAGE(estimator << ": ranks vs one process, max |difference| of actor " << actor << ", critic " << critic);
    CHECK(actor <= 1e-6);
    CHECK(critic <= 1e-6);

    // The control: a rank stepping alone on its own collection is not the combined step.
    LearnerState alone = make_learner(c);
    update_alone(alone, batches[0]);
    CHECK(max_abs_difference(alone.actor, single.actor) > 1e-4);
  }
}

TEST_CASE("the anchor term reads the reference kept from scoring: the same update as recomputing it per mini-batch") {
  const turnrl::test::TempDir run_dir("turnrl_kept_reference_test");
  const std::string& root = run_dir.path();
  const std::string model = untied_tiny_model(root);
  TrainConfig c = learner_config(model, "gae");
  c.ppo.anchor_kl_coef = 0.5;
  c.ppo.epochs = 3;
  c.sampling.action_tokens_only = false;  // the whole vocabulary, as free-form replies have it
  c.sampling.max_response_tokens = 4;
  const auto sampler = make_policy_agent(turnrl::agents::LanguageModel::load(model), c, false, c.run.seed);
  RolloutBatch batch = collect(c, *sampler, 0, kSlotsPerRank);
  give_rewards(batch);
  // Replies of 1 to 4 tokens, so a mini-batch right-aligns rows of different lengths.
  std::set<size_t> lengths;
  for (size_t i = 0; i < batch.turns.size(); ++i) {
    std::vector<int32_t>& reply = batch.turns[i].response_ids;
    reply.resize(std::min(reply.size(), 1 + i % 4));
    lengths.insert(reply.size());
  }
  REQUIRE(lengths.size() > 2);
  // The reference must differ from the actor for the term to have a gradient: one update first.
  LearnerState kept = make_learner(c), recomputed = make_learner(c);
  for (LearnerState* l : {&kept, &recomputed}) update_alone(*l, batch);
  const TrainingTargets targets = compute_targets(kept, batch, assign_token_rewards(*kept.reward_manager, batch));
  REQUIRE(targets.reference_log_distributions.size() == batch.turns.size());
  for (size_t i = 0; i < batch.turns.size(); ++i) {
    CHECK(targets.reference_log_distributions[i].size(0) == static_cast<int64_t>(batch.turns[i].response_ids.size()));
  }
  TrainingTargets without = compute_targets(recomputed, batch, assign_token_rewards(*recomputed.reward_manager, batch));
  without.reference_log_distributions.clear();
  const nlohmann::json from_kept = ppo_update(kept, batch, targets, true, std::numeric_limits<size_t>::max());
  const nlohmann::json from_model = ppo_update(recomputed, batch, without, true, std::numeric_limits<size_t>::max());
  CHECK(from_kept.at("anchor_kl").get<double>() > 1e-6);
  CHECK(from_kept.at("anchor_kl").get<double>() == doctest::Approx(from_model.at("anchor_kl").get<double>()).epsilon(1e-4));
  CHECK(max_abs_difference(kept.actor, recomputed.actor) <= 1e-6);
  // The control: the same update without the anchor term lands elsewhere, and keeps nothing.
  c.ppo.anchor_kl_coef = 0.0;
  LearnerState plain = make_learner(c);
  update_alone(plain, batch);
  const TrainingTargets plain_targets = compute_targets(plain, batch, assign_token_rewards(*plain.reward_manager, batch));
  CHECK(plain_targets.reference_log_distributions.empty());
  ppo_update(plain, batch, plain_targets, true, std::numeric_limits<size_t>::max());
  CHECK(max_abs_difference(plain.actor, kept.actor) > 1e-4);
}

namespace {

std::string write_config(const std::string& root, const std::string& text) {
  std::filesystem::create_directories(root);
  std::ofstream(root + "/config.yaml") << text;
  return root + "/config.yaml";
}

}  // namespace

TEST_CASE("a two-rank run resumes from its checkpoint where it stopped") {
  const turnrl::test::TempDir run_dir("turnrl_dp_resume_test");
  const std::string& root = run_dir.path();
  // Episodes of BabyAI outlast e_len = 3, so the checkpoint cuts them mid-episode on both ranks.
  const std::string config = write_config(root, "model:\n  path: " + root + "/model\n  preset: tiny\n  threads: 1\n"
                                                "env:\n  id: [babyai/goto, babyai/open]\n  n_env: 4\n  e_len: 3\n"
                                                "ppo:\n  minibatch: 6\n  epochs: 2\n  critic_warmup_iterations: 1\n"
                                                "run:\n  iterations: 4\n  checkpoint_every: 2\n  eval_every: 2\n  eval_episodes: 2\n");
  const auto uninterrupted = run_turnrl("train --config " + config + " --nproc 2 --out " + root + "/uninterrupted");
  REQUIRE_MESSAGE(uninterrupted.exit_code == 0, uninterrupted.output);
  const auto first = run_turnrl("train --config " + config + " --nproc 2 --iterations 2 --out " + root + "/interrupted");
  REQUIRE_MESSAGE(first.exit_code == 0, first.output);
  const nlohmann::json state = read_json(root + "/interrupted/checkpoint/state.json");
  CHECK(state.at("iteration") == 2);
  REQUIRE(state.at("ranks").size() == 2u);
  for (const auto& rank : state.at("ranks")) {
    size_t steps_in_flight = 0;
    for (const auto& slot : rank.at("rollout").at("slots")) steps_in_flight += slot.at("replies").size();
    CHECK(steps_in_flight > 0);
  }
  const auto resumed = run_turnrl("train --config " + config + " --nproc 2 --resume " + root + "/interrupted --out " + root + "/interrupted");
  REQUIRE_MESSAGE(resumed.exit_code == 0, resumed.output);
  CHECK(resumed.output.find("resumed from " + root + "/interrupted/checkpoint at iteration 2") != std::string::npos);

  const auto expected = turnrl::test::deterministic_metrics(root + "/uninterrupted/metrics.jsonl");
  const auto continued = turnrl::test::deterministic_metrics(root + "/interrupted/metrics.jsonl");
  for (const std::string key : {"eval/0", "critic_warmup/0", "train/1", "train/2", "eval/2", "train/3", "train/4", "eval/4"}) {
    INFO(key);
    REQUIRE(expected.count(key) == 1);
    REQUIRE(continued.count(key) == 1);
    CHECK(continued.at(key).dump() == expected.at(key).dump());
  }
  CHECK(continued.size() == expected.size());
  CHECK(expected.at("train/1").at("turns") == 2 * 4 * 3);  // rank 0 writes the combined batch's metrics
  CHECK(read_json(root + "/interrupted/checkpoint/state.json").at("iteration") == 4);
  CHECK(std::filesystem::exists(root + "/interrupted/model/model.safetensors"));

  // Another number of ranks cannot take over the ranks' episodes: every rank says so, the launcher fails.
  const auto three = run_turnrl("train --config " + config + " --nproc 3 --resume " + root + "/interrupted --out " + root + "/three");
  CHECK(three.exit_code == 1);
  CHECK(three.output.find("was saved by a run of 2 process(es): resume it with as many") != std::string::npos);
  CHECK(three.output.find("rank 2 failed") != std::string::npos);
  const auto one = run_turnrl("train --config " + config + " --resume " + root + "/interrupted --out " + root + "/one");
  CHECK(one.exit_code == 1);
  CHECK(one.output.find("was saved by a run of 2 process(es)") != std::string::npos);

  // SIGTERM to the launcher reaches every rank: they stop after the same iteration and rank 0 saves.
  const std::string command = "timeout --preserve-status -s TERM 30 " + std::string(TURNRL_BINARY) + " train --config " + config +
                              " --nproc 2 --iterations 100000 --out " + root + "/stopped > " + root + "/stopped.log 2>&1";
  CHECK(WEXITSTATUS(std::system(command.c_str())) == 0);
  std::ifstream log(root + "/stopped.log");
  const std::string stopped_log((std::istreambuf_iterator<char>(log)), {});
  INFO(stopped_log);
  CHECK(stopped_log.find("[rank 0] [warning] stop requested") != std::string::npos);
  CHECK(read_json(root + "/stopped/checkpoint/state.json").at("ranks").size() == 2u);
  CHECK(std::filesystem::exists(root + "/stopped/model/model.safetensors"));
}

TEST_CASE("ranks fill their own share of a dynamically sampled batch") {
  const turnrl::test::TempDir run_dir("turnrl_dp_dynamic_test");
  const std::string& root = run_dir.path();
  // The ranks' collections keep different numbers of groups and take different numbers of tries.
  const std::string config = write_config(root, "model:\n  path: " + root + "/model\n  preset: tiny\n  threads: 1\n"
                                                "env:\n  id: corridor/short\n  n_env: 8\n  e_len: 6\n  group_size: 4\n"
                                                "turn:\n  layout: compact\n  history: 0\n  reply_format: action-tag\n  invalid_feedback: false\n"
                                                "ppo:\n  estimator: grpo\n  minibatch: 8\n  epochs: 1\n"
                                                "reward:\n  manager: episode\n  dynamic_sampling_tries: 3\n"
                                                "run:\n  iterations: 2\n  eval_every: 10\n  eval_episodes: 1\n");
  const auto run = run_turnrl("train --config " + config + " --nproc 2 --out " + root + "/run");
  REQUIRE_MESSAGE(run.exit_code == 0, run.output);
  const auto metrics = turnrl::test::deterministic_metrics(root + "/run/metrics.jsonl");
  for (const std::string key : {"train/1", "train/2"}) {
    INFO(key);
    REQUIRE(metrics.count(key) == 1);
    const nlohmann::json& line = metrics.at(key);
    const size_t wanted = line.at("groups_wanted"), kept = line.at("groups_kept");
    CHECK(wanted >= 2u * 8 / 4);  // both ranks' first collections: at least n_env / group_size groups each
    CHECK(kept <= wanted);
    CHECK(line.at("sampling_tries").get<int>() <= 3);
    CHECK(line.at("turns").get<size_t>() <= kept * 4 * 6);
  }
}

TEST_CASE("turnrl sft --nproc 2 fine-tunes as one process does") {
  const turnrl::test::TempDir run_dir("turnrl_sft_nproc_test");
  const std::string& root = run_dir.path();
  turnrl::agents::write_new_model("tiny", root + "/base", 0, "");
  {
    std::ofstream data(root + "/data.jsonl");
    for (int k = 0; k < 45; ++k) {  // batches of 8: the last one has 5 rows, split 3 and 2
      const std::string side = k % 3 == 0 ? "left" : "right";
      data << nlohmann::json{{"messages", {{{"role", "user"}, {"content", "the exit is " + std::to_string(k % 5 + 1) + " steps to the " + side}},
                                           {{"role", "assistant"}, {"content", "ACTION: go " + side}}}}}
                  .dump()
           << "\n";
    }
  }
  const std::string common = "sft --data " + root + "/data.jsonl --model " + root + "/base --set format.epochs=2 --set format.batch_size=8 --set format.lr=3e-3 --threads 1";
  const auto alone = run_turnrl(common + " --out " + root + "/alone");
  REQUIRE_MESSAGE(alone.exit_code == 0, alone.output);
  const auto ranks = run_turnrl(common + " --nproc 2 --out " + root + "/ranks");
  REQUIRE_MESSAGE(ranks.exit_code == 0, ranks.output);
  CHECK(ranks.output.find("starting 2 ranks") != std::string::npos);
  auto losses = [](const std::string& path) {
    std::vector<double> values;
    std::ifstream in(path);
    for (std::string line; std::getline(in, line);) values.push_back(nlohmann::json::parse(line).at("loss").get<double>());
    return values;
  };
  const std::vector<double> one = losses(root + "/alone/sft_metrics.jsonl"), two = losses(root + "/ranks/sft_metrics.jsonl");
  REQUIRE(one.size() == 12u);
  REQUIRE(two.size() == one.size());
  for (size_t k = 0; k < one.size(); ++k) CHECK(two[k] == doctest::Approx(one[k]).epsilon(1e-4));
  CHECK(one.back() < 0.5 * one.front());
  auto a = turnrl::agents::load_qwen2(root + "/alone", false, torch::kCPU);
  auto b = turnrl::agents::load_qwen2(root + "/ranks", false, torch::kCPU);
  CHECK(max_abs_difference(a, b) < 1e-4);
}
