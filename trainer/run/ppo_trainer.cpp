#include "trainer/run/ppo_trainer.h"

#include <spdlog/spdlog.h>

#include <chrono>
#include <filesystem>
#include <limits>

#include <nlohmann/json.hpp>

#include "agents/model/compute_threads.h"
#include "agents/model/device.h"
#include "agents/model/language_model.h"
#include "envs/registry.h"
#include "trainer/algo/learner_state.h"
#include "trainer/algo/ppo_update.h"
#include "trainer/dist/distributed.h"
#include "trainer/rewards/http_scorer.h"
#include "trainer/rewards/process_scorer.h"
#include "trainer/rollout/episode_restart.h"
#include "trainer/rollout/policy_agent.h"
#include "trainer/rollout/rollout.h"
#include "trainer/rollout/worker_env.h"
#include "trainer/run/checkpoint.h"
#include "trainer/run/collector.h"
#include "trainer/run/iteration_metrics.h"
#include "trainer/run/metrics_log.h"
#include "trainer/run/run_evaluator.h"
#include "trainer/run/run_folder.h"
#include "trainer/run/time_budget.h"
#include "trainer/sft/format_stage.h"

namespace turnrl::trainer {
namespace {

using Clock = std::chrono::steady_clock;

std::unique_ptr<torch::optim::AdamW> make_optimizer(agents::Qwen2Model& model, double lr, double weight_decay) {
  return std::make_unique<torch::optim::AdamW>(model->parameters(), torch::optim::AdamWOptions(lr).weight_decay(weight_decay).eps(1e-5));
}

/** Whether `flag` holds on any rank (the ranks stop together); `flag` itself in one process. */
bool on_any_rank(ProcessGroup* ranks, bool flag) {
  if (!ranks) return flag;
  std::vector<double> value = {flag ? 1.0 : 0.0};
  ranks->max(value);
  return value[0] > 0;
}

/** The actor, critic (from `checkpoint` when resuming, else from `path`), the frozen reference and the optimisers. */
void load_models(LearnerState& l, const std::string& path, const std::string& checkpoint) {
  const TrainConfig& c = l.config;
  torch::manual_seed(c.run.seed);  // here, so the critic's head does not depend on whether the preset ran
  l.actor = agents::load_qwen2(checkpoint.empty() ? path : checkpoint + "/actor", false, l.device);
  l.critic = agents::load_qwen2(checkpoint.empty() ? path : checkpoint + "/critic", true, l.device);
  l.reference = agents::load_qwen2(path, false, l.device);
  l.reference->eval();
  for (auto& p : l.reference->parameters()) p.set_requires_grad(false);
  if (l.ranks) {
    // Every rank starts from rank 0's weights, whatever its copy of the files holds.
    l.ranks->broadcast(l.actor->parameters());
    l.ranks->broadcast(l.critic->parameters());
  }
  l.actor_optimizer = make_optimizer(l.actor, c.ppo.actor_lr, c.ppo.weight_decay);
  l.critic_optimizer = make_optimizer(l.critic, c.ppo.critic_lr, c.ppo.weight_decay);
}

/** The scoring streams the config asks for: an external scorer, process rewards over `policy`. */
void open_reward_streams(RewardStreams& streams, const TrainConfig& c, std::shared_ptr<agents::LanguageModel> policy,
                         const std::vector<int32_t>& allowed_tokens) {
  streams.streaming = c.reward.streaming;
  if (!c.reward.scorer.url.empty()) {
    const SampleUnit unit = c.reward.manager == TrainConfig::Reward::Manager::kEpisode ? SampleUnit::kEpisode : SampleUnit::kTurn;
    streams.scorer = std::make_unique<ScoringStream>(std::make_shared<HttpScorer>(c.reward.scorer),
                                                     ScoringStreamOptions{unit, c.reward.scorer.concurrency, 1});
  }
  if (c.reward.process) {
    // One worker: its forward passes share the CPU with generation; it takes every reply waiting.
    streams.process = std::make_unique<ScoringStream>(std::make_shared<ProcessRewardScorer>(policy, c.reward.process_rewards, allowed_tokens),
                                                      ScoringStreamOptions{SampleUnit::kTurn, 1, static_cast<size_t>(c.env.n_env)});
  }
}

/** The env of each of this rank's slots: in-process, or on the config's env-server workers. */
Rollout::EnvFactory env_factory(const TrainConfig& c) {
  std::shared_ptr<WorkerPool> workers;
  if (!c.env.workers.empty()) {
    const auto ms = [](double seconds) { return std::chrono::ceil<std::chrono::milliseconds>(std::chrono::duration<double>(seconds)); };
    workers = std::make_shared<WorkerPool>(WorkerPoolOptions{c.env.workers, ms(c.env.worker_timeout), ms(c.env.worker_heartbeat)});
  }
  return [&c, workers](int slot) -> std::unique_ptr<envs::Env> {
    const size_t task = c.env.task_of_slot(slot);
    if (workers) return std::make_unique<WorkerEnv>(workers, slot % workers->size(), c.env.ids[task], c.env.options);
    return envs::make_env(c.env.ids[task], c.env.options);
  };
}

}  // namespace

struct PpoTrainer::Impl {
  LearnerState learner;
  std::unique_ptr<agents::Agent> sampler, evaluator;  // token-level agents over the live actor
  RewardStreams reward_streams;  // before the rollout, which reports finished turns to them
  std::unique_ptr<Rollout> rollout;
  int iteration = 0;
  double elapsed_before = 0.0;  // seconds spent before a resume
  double setup_seconds = 0.0;   // before PPO began: the format stage and loading (run.total_minutes counts them)
  std::vector<EvalPoint> curve;

  const TrainConfig& config() const { return learner.config; }
  const std::string& base_model() const { return learner.config.initial_model(); }
  ProcessGroup* ranks() const { return learner.ranks.get(); }
  int rank() const { return learner.ranks ? learner.ranks->rank() : 0; }
  int world_size() const { return learner.ranks ? learner.ranks->size() : 1; }
  bool writes_run() const { return rank() == 0; }  // evaluations, metrics, checkpoints, the model

  void make_agents_and_rollout();
  void resume(const std::string& checkpoint);
  void warm_up_critic(MetricsLog& log, const std::function<bool()>& stopping);
  void save_checkpoint(const TimeBudget& budget);
};

void PpoTrainer::Impl::make_agents_and_rollout() {
  const TrainConfig& c = learner.config;
  const std::string& path = c.initial_model();
  std::shared_ptr<agents::LanguageModel> policy = agents::LanguageModel::over(learner.actor, agents::Tokenizer::load(path));
  learner.allowed_tokens = action_vocabulary(c, policy->tokenizer());
  learner.pad_id = policy->tokenizer().pad_id();
  sampler = make_policy_agent(policy, c, false, c.run.seed);
  evaluator = make_policy_agent(policy, c, c.run.eval_decoding == TrainConfig::Run::Decoding::kGreedy, c.run.seed);
  if (!sampler->token_level()) throw std::logic_error("the training agent must be token-level");
  open_reward_streams(reward_streams, c, policy, learner.allowed_tokens);

  RolloutConfig settings;
  settings.n_env = c.env.n_env;
  settings.e_len = c.env.e_len;
  settings.seed = c.run.seed;
  settings.first_episode_seed = c.run.first_training_seed();  // load() keeps the evaluation seeds out of the block
  settings.group_size = c.env.group_size;
  settings.first_slot = rank() * c.env.n_env;
  settings.run_slots = world_size() * c.env.n_env;
  settings.turn = c.turn;
  settings.record_state_hashes = learner.estimator == Estimator::kGigpo;
  settings.on_turn_finished = reward_streams.observer();
  rollout = std::make_unique<Rollout>(env_factory(c), *sampler, settings);
}

void PpoTrainer::Impl::resume(const std::string& checkpoint) {
  const CheckpointState state = load_checkpoint(checkpoint, learner);
  if (static_cast<int>(state.ranks.size()) != world_size()) {
    throw std::invalid_argument(checkpoint + " was saved by a run of " + std::to_string(state.ranks.size()) +
                                " process(es): resume it with as many (--nproc or --world-size " + std::to_string(state.ranks.size()) +
                                "), not " + std::to_string(world_size()));
  }
  iteration = state.iteration;
  elapsed_before = state.elapsed_seconds;
  setup_seconds = state.setup_seconds;
  rollout->restore(state.ranks[rank()].rollout);
  curve = state.curve;
  learner.reward_manager->load_state(state.ranks[rank()].reward_manager);
  spdlog::info("resumed from {} at iteration {}", checkpoint, iteration);
}

PpoTrainer::PpoTrainer(TrainConfig config, const std::string& resume, std::shared_ptr<ProcessGroup> ranks)
    : impl_(std::make_unique<Impl>()) {
  Impl& s = *impl_;
  LearnerState& l = s.learner;
  const auto constructed = Clock::now();
  l.config = std::move(config);
  l.ranks = std::move(ranks);
  const TrainConfig& c = l.config;
  l.device = agents::resolve_device(c.model.device, s.rank());  // "cuda": rank R on GPU R
  agents::set_compute_threads(c.model.threads);
  prepare_initial_model(c, l.ranks.get());  // a collective: the ranks make the format stage together
  const std::string& path = c.initial_model();
  if (l.ranks) {
    l.ranks->barrier();  // the models rank 0 may have made are there
    if (!std::filesystem::exists(path + "/config.json")) {
      throw std::invalid_argument("'" + path + "' holds no model on this machine (rank 0 makes a preset's model and leads the "
                                  "format stage: copy them here or share the folder)");
    }
  }
  const std::string checkpoint = resume.empty() ? "" : find_checkpoint(resume);
  load_models(l, path, checkpoint);
  l.shuffle_rng.seed(c.run.seed);
  l.estimator = c.ppo.estimator;
  l.reward_manager = rewards::make_reward_manager(enum_name(c.reward.manager), c.reward.normalize_by_length);
  s.make_agents_and_rollout();
  if (!checkpoint.empty()) s.resume(checkpoint);
  if (l.ranks) {
    std::vector<double> iterations = {static_cast<double>(s.iteration), -static_cast<double>(s.iteration)};
    l.ranks->max(iterations);
    if (iterations[0] != -iterations[1]) {
      throw std::runtime_error("the ranks start at different iterations (" + std::to_string(static_cast<int>(-iterations[1])) + " to " +
                               std::to_string(static_cast<int>(iterations[0])) + "): do they all see the same checkpoint?");
    }
  }
  if (checkpoint.empty()) s.setup_seconds = std::chrono::duration<double>(Clock::now() - constructed).count();
}

PpoTrainer::~PpoTrainer() = default;

void PpoTrainer::Impl::warm_up_critic(MetricsLog& log, const std::function<bool()>& stopping) {
  const TrainConfig& c = learner.config;
  if (c.ppo.critic_warmup_iterations <= 0 || !learner.uses_critic()) return;
  // One large collection, the critic alone fitted on it several times.
  const RolloutBatch batch = rollout->collect(c.env.e_len * c.ppo.critic_warmup_multiplier);
  const StageRewards stage_rewards = assign_token_rewards(*learner.reward_manager, batch, &reward_streams);
  log_restarts(batch.restarts);
  const size_t max_rows = static_cast<size_t>(world_size()) * c.env.n_env * c.env.e_len * 4;
  for (int w = 0; w < c.ppo.critic_warmup_iterations && !stopping(); ++w) {
    const TrainingTargets targets = compute_targets(learner, batch, stage_rewards);
    const nlohmann::json m = ppo_update(learner, batch, targets, false, max_rows);
    log.write({{"type", "critic_warmup"}, {"step", w}, {"value_loss", m["value_loss"]}});
    spdlog::info("critic warm-up {}/{} | value loss {:.4f}", w + 1, c.ppo.critic_warmup_iterations, m["value_loss"].get<double>());
  }
}

void PpoTrainer::Impl::save_checkpoint(const TimeBudget& budget) {
  RankState mine{rollout->state(), learner.reward_manager->state()};
  CheckpointState state{iteration, budget.elapsed(), setup_seconds, {}, curve};
  if (!learner.ranks) {
    state.ranks.push_back(std::move(mine));
  } else {
    const nlohmann::json text = {{"rollout", mine.rollout}, {"reward_manager", mine.reward_manager}};
    for (const std::string& rank : learner.ranks->gather(text.dump())) {
      const nlohmann::json json = nlohmann::json::parse(rank);
      state.ranks.push_back({json.at("rollout"), json.at("reward_manager")});
    }
  }
  if (writes_run()) trainer::save_checkpoint(config().run.out + "/checkpoint", learner, state, config().to_yaml(), base_model());
}

void PpoTrainer::train(const std::atomic<bool>* stop_requested) {
  Impl& s = *impl_;
  const TrainConfig& c = s.config();
  ProcessGroup* ranks = s.ranks();
  const auto stop_asked = [&] { return stop_requested && stop_requested->load(); };
  const auto stopping = [&] { return on_any_rank(ranks, stop_asked()); };  // the ranks stop at the same iteration
  MetricsLog log(c.run.out, c.to_yaml(), s.iteration, s.writes_run());
  TimeBudget budget(c.run, s.elapsed_before, s.setup_seconds);
  RunEvaluator evaluation(s.learner, s.base_model(), log, budget, s.curve, s.iteration);
  Collector collector(s.learner, *s.rollout, s.reward_streams);
  int last_checkpoint = s.iteration;
  if (s.iteration == 0) {
    evaluation.evaluate(*s.evaluator, s.iteration);
    s.warm_up_critic(log, stopping);
  }
  budget.start_loop(s.iteration);
  while (s.iteration < c.run.iterations && !on_any_rank(ranks, budget.out_of_time(s.iteration, evaluation.last_seconds()) || stop_asked())) {
    IterationClock clock;
    Collection collection = collector.collect();  // collect -> rewards -> targets
    clock.rollout_seconds = clock.seconds();
    nlohmann::json update = ppo_update(s.learner, collection.batch, collection.targets, true, std::numeric_limits<size_t>::max());
    clock.update_seconds = clock.seconds() - clock.rollout_seconds;
    ++s.iteration;
    const nlohmann::json line = iteration_metrics(c, s.iteration, collection, std::move(update), clock, budget, ranks);
    log.write(line);
    log_iteration(c, line, budget.eta_seconds(s.iteration, evaluation.last_seconds()));
    if (s.iteration % c.run.eval_every == 0) evaluation.evaluate(*s.evaluator, s.iteration);
    if (s.iteration % c.run.checkpoint_every == 0) {
      s.save_checkpoint(budget);
      last_checkpoint = s.iteration;
    }
  }
  const bool stopped = stopping();
  if (stopped) spdlog::warn("stop requested: saving the state at iteration {}", s.iteration);
  if (evaluation.last_iteration() != s.iteration && !stopped) evaluation.evaluate(*s.evaluator, s.iteration);
  if (last_checkpoint != s.iteration || on_any_rank(ranks, s.writes_run() && !std::filesystem::exists(c.run.out + "/checkpoint"))) {
    s.save_checkpoint(budget);
  }
  evaluation.finish(s.iteration, stopped);
  if (ranks) ranks->barrier();  // every rank returns once the run is saved
  spdlog::info("done: {} iterations in {:.1f} min ({:.1f} min with the format stage and loading); model in {}/model, metrics in "
               "{}/metrics.jsonl, curve in {}/curve.svg",
               s.iteration, budget.elapsed() / 60.0, (s.setup_seconds + budget.elapsed()) / 60.0, c.run.out, c.run.out, c.run.out);
}

UpdateTimings PpoTrainer::time_updates(int updates) {
  Impl& s = *impl_;
  Collector collector(s.learner, *s.rollout, s.reward_streams);
  const Collection collection = collector.collect();
  UpdateTimings timings;
  timings.turns = collection.batch.turns.size();
  for (const TurnRecord& turn : collection.batch.turns) {
    timings.prompt_tokens += static_cast<double>(turn.prompt_ids.size());
    timings.response_tokens += static_cast<double>(turn.response_ids.size());
  }
  for (int u = 0; u < updates; ++u) {
    const auto start = Clock::now();
    ppo_update(s.learner, collection.batch, collection.targets, true, std::numeric_limits<size_t>::max());
    timings.seconds.push_back(std::chrono::duration<double>(Clock::now() - start).count());
  }
  return timings;
}

}  // namespace turnrl::trainer
