#include "trainer/ppo_trainer.h"

#include <spdlog/spdlog.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>

#include <nlohmann/json.hpp>

#include "agents/model/compute_threads.h"
#include "agents/model/device.h"
#include "agents/model/language_model.h"
#include "trainer/format_stage.h"
#include "envs/registry.h"
#include "trainer/checkpoint.h"
#include "trainer/distributed.h"
#include "trainer/learner_state.h"
#include "trainer/learning_curve.h"
#include "trainer/http_scorer.h"
#include "trainer/policy_agent.h"
#include "trainer/ppo_update.h"
#include "trainer/process_scorer.h"
#include "trainer/reward_stage.h"
#include "trainer/signal_batch.h"
#include "trainer/rollout/evaluation.h"
#include "trainer/rollout/rollout.h"
#include "trainer/rollout/worker_env.h"
#include "trainer/run_folder.h"
#include "trainer/targets.h"

namespace turnrl::trainer {
namespace {

using Clock = std::chrono::steady_clock;

/** The reward stage's figures over the collections of one iteration, for the metrics. */
struct RewardTotals {
  double wait_seconds = 0, scorer_seconds = 0, process_seconds = 0;
  double process_abs_sum = 0;  // |U| over the process rewards given (segment ends whose U is not 0)
  size_t process_count = 0;

  void add(const StageRewards& rewards) {
    wait_seconds += rewards.wait_seconds;
    scorer_seconds += rewards.scorer_seconds;
    process_seconds += rewards.process_seconds;
    for (const auto& row : rewards.process) {
      for (float u : row) {
        process_abs_sum += std::abs(u);
        process_count += u != 0.0f;
      }
    }
  }
  nlohmann::json metrics(const TrainConfig& c) const {
    nlohmann::json m = nlohmann::json::object();
    if (c.reward.scorer.url.empty() && !c.reward.process) return m;  // no stream to wait for
    m["reward_wait_s"] = wait_seconds;
    if (!c.reward.scorer.url.empty()) m["scorer_s"] = scorer_seconds;
    if (c.reward.process) {
      m["process_s"] = process_seconds;
      m["process_abs_mean"] = process_count ? process_abs_sum / process_count : 0.0;
    }
    return m;
  }
};

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
  int rank() const { return learner.ranks ? learner.ranks->rank() : 0; }
  int world_size() const { return learner.ranks ? learner.ranks->size() : 1; }
  bool writes_run() const { return rank() == 0; }  // evaluations, metrics, checkpoints, the model
};

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
  torch::manual_seed(c.run.seed);  // here, so the critic's head does not depend on whether the preset ran
  const std::string checkpoint = resume.empty() ? "" : find_checkpoint(resume);
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
  l.shuffle_rng.seed(c.run.seed);
  l.estimator = parse_estimator(c.ppo.estimator);
  l.reward_manager = rewards::make_reward_manager(c.reward.manager, c.reward.normalize_by_length);

  std::shared_ptr<agents::LanguageModel> policy = agents::LanguageModel::over(l.actor, agents::Tokenizer::load(path));
  l.allowed_tokens = action_vocabulary(c, policy->tokenizer());
  l.pad_id = policy->tokenizer().pad_id();
  s.sampler = make_policy_agent(policy, c, false, c.run.seed);
  s.evaluator = make_policy_agent(policy, c, c.run.eval_decoding == "greedy", c.run.seed);
  if (!s.sampler->token_level()) throw std::logic_error("the training agent must be token-level");

  RolloutConfig rollout;
  rollout.n_env = c.env.n_env;
  rollout.e_len = c.env.e_len;
  rollout.seed = c.run.seed;
  rollout.first_episode_seed = c.run.first_training_seed();  // load() keeps the evaluation seeds out of the block
  rollout.group_size = c.env.group_size;
  rollout.first_slot = s.rank() * c.env.n_env;
  rollout.run_slots = s.world_size() * c.env.n_env;
  rollout.turn = c.turn;
  rollout.record_state_hashes = l.estimator == Estimator::kGigpo;
  s.reward_streams.streaming = c.reward.streaming;
  if (!c.reward.scorer.url.empty()) {
    const SampleUnit unit = c.reward.manager == "episode" ? SampleUnit::kEpisode : SampleUnit::kTurn;
    s.reward_streams.scorer = std::make_unique<ScoringStream>(std::make_shared<HttpScorer>(c.reward.scorer),
                                                              ScoringStreamOptions{unit, c.reward.scorer.concurrency, 1});
  }
  if (c.reward.process) {
    // One worker: its forward passes share the CPU with generation; it takes every reply waiting.
    s.reward_streams.process = std::make_unique<ScoringStream>(
        std::make_shared<ProcessRewardScorer>(policy, c.reward.process_rewards, l.allowed_tokens),
        ScoringStreamOptions{SampleUnit::kTurn, 1, static_cast<size_t>(c.env.n_env)});
  }
  rollout.on_turn_finished = s.reward_streams.observer();
  std::shared_ptr<WorkerPool> workers;
  if (!c.env.workers.empty()) {
    const auto ms = [](double seconds) {
      return std::chrono::ceil<std::chrono::milliseconds>(std::chrono::duration<double>(seconds));
    };
    workers = std::make_shared<WorkerPool>(WorkerPoolOptions{c.env.workers, ms(c.env.worker_timeout), ms(c.env.worker_heartbeat)});
  }
  s.rollout = std::make_unique<Rollout>(
      [&c, workers](int slot) -> std::unique_ptr<envs::Env> {
        const size_t task = c.env.task_of_slot(slot);
        if (workers) return std::make_unique<WorkerEnv>(workers, slot % workers->size(), c.env.ids[task], c.env.options);
        return envs::make_env(c.env.ids[task], c.env.options);
      },
      *s.sampler, rollout);
  if (!checkpoint.empty()) {
    const CheckpointState state = load_checkpoint(checkpoint, l);
    if (static_cast<int>(state.ranks.size()) != s.world_size()) {
      throw std::invalid_argument(checkpoint + " was saved by a run of " + std::to_string(state.ranks.size()) +
                                  " process(es): resume it with as many (--nproc or --world-size " + std::to_string(state.ranks.size()) +
                                  "), not " + std::to_string(s.world_size()));
    }
    s.iteration = state.iteration;
    s.elapsed_before = state.elapsed_seconds;
    s.setup_seconds = state.setup_seconds;
    s.rollout->restore(state.ranks[s.rank()].rollout);
    s.curve = state.curve;
    l.reward_manager->load_state(state.ranks[s.rank()].reward_manager);
    spdlog::info("resumed from {} at iteration {}", checkpoint, s.iteration);
  }
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

void PpoTrainer::train(const std::atomic<bool>* stop_requested) {
  Impl& s = *impl_;
  LearnerState& l = s.learner;
  const TrainConfig& c = s.config();
  ProcessGroup* ranks = l.ranks.get();
  const bool writer = s.writes_run();
  const std::string metrics_path = c.run.out + "/metrics.jsonl";
  std::ofstream metrics;
  if (writer) {
    std::filesystem::create_directories(c.run.out);
    std::ofstream(c.run.out + "/config.yaml") << c.to_yaml();
    if (s.iteration > 0) truncate_metrics(metrics_path, s.iteration);
    // A resumed run continues the file (cut back to its checkpoint); a fresh run starts it anew.
    metrics.open(metrics_path, s.iteration > 0 ? std::ios::app : std::ios::trunc);
  }
  const auto start = Clock::now();
  auto elapsed = [&] { return s.elapsed_before + std::chrono::duration<double>(Clock::now() - start).count(); };
  // Asked to stop, on any rank: they all stop at the same iteration boundary.
  auto stopping = [&] { return on_any_rank(ranks, stop_requested && stop_requested->load()); };
  int last_eval = -1, last_checkpoint = s.iteration;
  const std::string best_dir = c.run.out + "/best";
  BestModel best;
  if (writer && c.run.keep_best) {
    // A fresh run forgets an earlier run's best; a resumed one goes on from its own.
    if (s.iteration > 0) {
      best = read_best_model(best_dir);
    } else {
      std::filesystem::remove_all(best_dir);
      std::filesystem::remove_all(best_dir + ".old");
    }
  }

  // Scores `agent` on `episodes` seeds per task from `first_seed`, logs it, returns its metrics line.
  auto score_actor = [&](agents::Agent& agent, const char* type, int iteration, uint64_t first_seed, int episodes,
                         std::vector<TaskScore>* tasks_out) {
    const EvaluationSpec spec{c.env.ids, c.env.options, c.turn, first_seed, episodes};
    const std::vector<TaskScore> tasks = evaluate(spec, agent);
    const nlohmann::json scores = scores_json(tasks);
    double length = 0;
    for (const TaskScore& task : tasks) length += task.mean_length / tasks.size();
    const double success = scores["overall"]["success"];
    const double progression = scores["overall"]["progression"];
    const double progression_se = scores["overall"]["progression_se"];
    const std::string& decoding = c.run.eval_decoding;
    spdlog::info("{:<5} iter {:4d} | {:5.1f} min | {} success {:.3f}, progression {:.3f} +- {:.3f} on {} seeds from {} per task | mean length {:.1f}",
                 type, iteration, elapsed() / 60.0, decoding, success, progression, progression_se, episodes, first_seed, length);
    for (const TaskScore& task : tasks) {
      if (tasks.size() > 1) spdlog::info("      {:<28} {} success {:.3f}, progression {:.3f}", task.task, decoding, task.success, task.progression);
      if (!task.unlock_rates.empty()) spdlog::info("      {:<28} Crafter score {:.1f}%: {}", task.task, task.crafter_score, unlock_summary(task));
    }
    if (tasks_out) *tasks_out = tasks;
    return nlohmann::json{{"type", type},         {"iteration", iteration},     {"minutes", elapsed() / 60.0},
                          {"decoding", decoding}, {"success", success},         {"progression", progression},
                          {"progression_se", progression_se}, {"mean_length", length}, {"episodes", episodes}, {"first_seed", first_seed},
                          {"tasks", scores["tasks"]}};
  };
  double last_eval_seconds = 0;  // what the final evaluation is expected to take (run.total_minutes)
  auto eval_now = [&] {
    last_eval = s.iteration;
    if (c.run.eval_episodes <= 0 || !writer) return;
    const auto eval_start = Clock::now();
    std::vector<TaskScore> tasks;
    nlohmann::json line = score_actor(*s.evaluator, "eval", s.iteration, c.run.eval_seed, c.run.eval_episodes, &tasks);
    const double progression = line["progression"];
    std::vector<double> task_progression;
    for (const TaskScore& task : tasks) task_progression.push_back(task.progression);
    s.curve.push_back({elapsed() / 60.0, s.iteration, progression, task_progression});
    if (c.run.keep_best && (best.iteration < 0 || progression > best.progression)) {
      best = {s.iteration, progression};
      save_model(best_dir, l, s.base_model(), &best);
      line["best"] = true;
    }
    metrics << line.dump() << "\n" << std::flush;
    write_learning_curve_svg(c.run.out + "/curve.svg", s.curve, c.env.ids, c.run.eval_decoding);
    last_eval_seconds = std::chrono::duration<double>(Clock::now() - eval_start).count();
  };
  auto checkpoint_now = [&] {
    last_checkpoint = s.iteration;
    RankState mine{s.rollout->state(), l.reward_manager->state()};
    CheckpointState state{s.iteration, elapsed(), s.setup_seconds, {}, s.curve};
    if (!ranks) {
      state.ranks.push_back(std::move(mine));
    } else {
      const nlohmann::json text = {{"rollout", mine.rollout}, {"reward_manager", mine.reward_manager}};
      for (const std::string& rank : ranks->gather(text.dump())) {
        const nlohmann::json json = nlohmann::json::parse(rank);
        state.ranks.push_back({json.at("rollout"), json.at("reward_manager")});
      }
    }
    if (writer) save_checkpoint(c.run.out + "/checkpoint", l, state, c.to_yaml(), s.base_model());
  };

  if (s.iteration == 0) {
    eval_now();
    if (c.ppo.critic_warmup_iterations > 0 && l.uses_critic()) {
      // Warm-up: one large collection, the critic alone fitted on it several times.
      const RolloutBatch batch = s.rollout->collect(c.env.e_len * c.ppo.critic_warmup_multiplier);
      const StageRewards stage_rewards = assign_token_rewards(*l.reward_manager, batch, &s.reward_streams);
      log_restarts(batch.restarts);
      const size_t max_rows = static_cast<size_t>(s.world_size()) * c.env.n_env * c.env.e_len * 4;
      for (int w = 0; w < c.ppo.critic_warmup_iterations && !stopping(); ++w) {
        const TrainingTargets targets = compute_targets(l, batch, stage_rewards);
        const nlohmann::json m = ppo_update(l, batch, targets, false, max_rows);
        if (writer) metrics << nlohmann::json{{"type", "critic_warmup"}, {"step", w}, {"value_loss", m["value_loss"]}}.dump() << "\n";
        spdlog::info("critic warm-up {}/{} | value loss {:.4f}", w + 1, c.ppo.critic_warmup_iterations, m["value_loss"].get<double>());
      }
    }
  }

  const int first_iteration = s.iteration;
  const double loop_start = elapsed();
  // This command's iterations so far, periodic evaluations and checkpoints included (0 before the first).
  auto seconds_per_iteration = [&] {
    const int done = s.iteration - first_iteration;
    return done > 0 ? (elapsed() - loop_start) / done : 0.0;
  };
  // Seconds left before run.total_minutes, keeping back what the next iteration and the closing
  // evaluations (the last one's duration, and the final one's, scaled by its seeds) are expected to take.
  auto total_seconds_left = [&] {
    const double final_share = c.run.eval_episodes > 0 ? static_cast<double>(c.run.final_episodes()) / c.run.eval_episodes : 0.0;
    const double closing = last_eval_seconds * (1 + final_share);
    return c.run.total_minutes * 60.0 - s.setup_seconds - elapsed() - seconds_per_iteration() - closing;
  };
  auto out_of_time = [&] {
    return (c.run.minutes > 0 && elapsed() >= c.run.minutes * 60.0) || (c.run.total_minutes > 0 && total_seconds_left() <= 0);
  };
  while (s.iteration < c.run.iterations && !on_any_rank(ranks, out_of_time() || (stop_requested && stop_requested->load()))) {
    const auto iteration_start = Clock::now();
    // Where the iteration's time goes: collecting (generation, env steps, prompts), scoring
    // (old/reference log-probs, values, rewards, advantages), the update.
    double collect_seconds = 0, scoring_seconds = 0;
    double agent_seconds = 0, env_seconds = 0, prompt_seconds = 0;  // parts of collecting
    auto timed = [](double& total, auto&& work) {
      const auto begin = Clock::now();
      auto result = work();
      total += std::chrono::duration<double>(Clock::now() - begin).count();
      return result;
    };
    auto collect = [&] {
      RolloutBatch collected = timed(collect_seconds, [&] { return s.rollout->collect(); });
      agent_seconds += collected.agent_seconds;
      env_seconds += collected.env_seconds;
      prompt_seconds += collected.prompt_seconds;
      return collected;
    };
    RolloutBatch batch;
    TrainingTargets targets;
    std::vector<EpisodeSummary> finished_episodes;
    nlohmann::json sampling = nlohmann::json::object();
    std::vector<EpisodeRestart> restarts;  // of every collection this iteration made
    RewardTotals reward_totals;
    // One collection with its rewards and targets (dynamic sampling may make several).
    auto collect_scored = [&] {
      ScoredCollection scored;
      scored.batch = collect();
      log_restarts(scored.batch.restarts);
      restarts.insert(restarts.end(), scored.batch.restarts.begin(), scored.batch.restarts.end());
      scored.rewards = timed(scoring_seconds, [&] { return assign_token_rewards(*l.reward_manager, scored.batch, &s.reward_streams); });
      reward_totals.add(scored.rewards);
      scored.targets = timed(scoring_seconds, [&] { return compute_targets(l, scored.batch, scored.rewards); });
      return scored;
    };
    if (c.reward.dynamic_sampling_tries > 0) {
      // Each rank fills its own share of the batch: the group estimators need no other rank.
      SignalBatch kept = sample_batch_with_signal(c, collect_scored, c.reward.dynamic_sampling_tries);
      batch = std::move(kept.turns);
      targets = std::move(kept.targets);
      finished_episodes = std::move(kept.finished_episodes);
      std::vector<double> groups = {static_cast<double>(kept.groups_wanted), static_cast<double>(kept.groups_kept),
                                    static_cast<double>(kept.groups_dropped)};
      std::vector<double> tries = {static_cast<double>(kept.tries)};
      if (ranks) {
        ranks->sum(groups);
        ranks->max(tries);
      }
      sampling = {{"groups_wanted", static_cast<size_t>(groups[0])}, {"groups_kept", static_cast<size_t>(groups[1])},
                  {"groups_dropped", static_cast<size_t>(groups[2])}, {"sampling_tries", static_cast<int>(tries[0])}};
    } else {
      ScoredCollection scored = collect_scored();
      batch = std::move(scored.batch);
      targets = std::move(scored.targets);
      finished_episodes = batch.finished_episodes;
    }
    const double rollout_seconds = std::chrono::duration<double>(Clock::now() - iteration_start).count();
    double update_seconds = 0;
    nlohmann::json m = timed(update_seconds, [&] { return ppo_update(l, batch, targets, true, std::numeric_limits<size_t>::max()); });
    m.update(sampling);
    m.update(reward_totals.metrics(c));
    ++s.iteration;
    double success = 0, reward = 0;
    // Per task of a mix: episodes finished and their progression summed (the training batch's own
    // signal: a task whose sampled episodes never progress gives the learner nothing to follow).
    std::vector<double> task_sums(c.env.ids.size() > 1 ? 2 * c.env.ids.size() : 0, 0.0);
    for (const auto& e : finished_episodes) {
      success += e.progression;
      reward += e.episode_return;
      if (!task_sums.empty()) {
        const size_t task = c.env.task_of_slot(e.slot);
        task_sums[2 * task] += 1.0;
        task_sums[2 * task + 1] += e.progression;
      }
    }
    size_t finished = finished_episodes.size(), turns = batch.turns.size();
    int invalid_turns = 0;
    size_t response_tokens = 0;
    for (const auto& t : batch.turns) {
      invalid_turns += !t.valid_action;
      response_tokens += t.response_ids.size();
    }
    double kl_reasoning = targets.kl_reasoning, kl_action = targets.kl_action, mean_value = targets.mean_value;
    nlohmann::json restarts_line = restarts_json(restarts);
    if (ranks) {
      // The metrics of the combined batch: sums over the ranks, and the means they make.
      const double reasoning_tokens = static_cast<double>(targets.reasoning_tokens);
      const double action_tokens = static_cast<double>(targets.action_tokens);
      std::vector<double> sums = {static_cast<double>(turns),    static_cast<double>(finished),
                                  success,                       reward,
                                  static_cast<double>(invalid_turns),
                                  kl_reasoning * reasoning_tokens, reasoning_tokens,
                                  kl_action * action_tokens,       action_tokens,
                                  mean_value * static_cast<double>(turns), static_cast<double>(response_tokens)};
      sums.insert(sums.end(), task_sums.begin(), task_sums.end());
      ranks->sum(sums);
      std::copy(sums.end() - static_cast<std::ptrdiff_t>(task_sums.size()), sums.end(), task_sums.begin());
      turns = static_cast<size_t>(sums[0]);
      finished = static_cast<size_t>(sums[1]);
      success = sums[2];
      reward = sums[3];
      invalid_turns = static_cast<int>(sums[4]);
      kl_reasoning = sums[6] > 0 ? sums[5] / sums[6] : 0.0;
      kl_action = sums[8] > 0 ? sums[7] / sums[8] : 0.0;
      mean_value = sums[9] / std::max<size_t>(1, turns);
      response_tokens = static_cast<size_t>(sums[10]);
      restarts_line = nlohmann::json::array();
      for (const std::string& rank : ranks->gather(restarts_json(restarts).dump())) {
        for (const auto& restart : nlohmann::json::parse(rank)) restarts_line.push_back(restart);
      }
    }
    const double seconds = std::chrono::duration<double>(Clock::now() - iteration_start).count();
    const size_t turns_trained = std::max<size_t>(1, turns);
    m["type"] = "train";
    m["iteration"] = s.iteration;
    m["minutes"] = elapsed() / 60.0;
    m["turns"] = turns;
    m["turns_per_s"] = turns / seconds;  // turns trained on per second
    m["rollout_share"] = rollout_seconds / seconds;
    m["seconds"] = {{"collect", collect_seconds}, {"generate", agent_seconds}, {"env", env_seconds}, {"prompt", prompt_seconds},
                    {"scoring", scoring_seconds}, {"update", update_seconds}, {"total", seconds}};
    m["episodes"] = finished;
    m["success"] = finished ? success / finished : 0.0;
    m["episode_reward"] = finished ? reward / finished : 0.0;
    m["invalid_rate"] = static_cast<double>(invalid_turns) / turns_trained;
    if (!task_sums.empty()) {
      nlohmann::json& tasks = m["task_success"] = nlohmann::json::object();
      for (size_t task = 0; task < c.env.ids.size(); ++task) {
        const double episodes = task_sums[2 * task];
        tasks[c.env.ids[task]] = {{"episodes", episodes}, {"progression", episodes > 0 ? task_sums[2 * task + 1] / episodes : 0.0}};
      }
    }
    m["reply_tokens"] = static_cast<double>(response_tokens) / turns_trained;  // end-of-turn token included
    m["kl_reasoning"] = kl_reasoning;
    m["kl_action"] = kl_action;
    m["mean_value"] = mean_value;
    if (!restarts_line.empty()) m["restarts"] = restarts_line;
    if (writer) metrics << m.dump() << "\n" << std::flush;
    double eta = (c.run.iterations - s.iteration) * seconds_per_iteration();
    if (c.run.minutes > 0) eta = std::min(eta, c.run.minutes * 60.0 - elapsed());
    if (c.run.total_minutes > 0) eta = std::min(eta, total_seconds_left());
    spdlog::info("iter {:4d}/{} | {:6.0f} turns/s | success {:.3f} ({} eps) | reward {:+.3f} | invalid {:.3f} | KL {:+.5f} | pi {:+.4f} | v {:.4f} | ent {:.3f} | ETA {:.1f} min",
                 s.iteration, c.run.iterations, m["turns_per_s"].get<double>(), m["success"].get<double>(), finished,
                 m["episode_reward"].get<double>(), m["invalid_rate"].get<double>(), kl_action, m.value("policy_loss", 0.0),
                 m.value("value_loss", 0.0), m.value("entropy", 0.0), std::max(0.0, eta) / 60.0);
    if (s.iteration % c.run.eval_every == 0) eval_now();
    if (s.iteration % c.run.checkpoint_every == 0) checkpoint_now();
  }
  const bool stopped = stopping();
  if (stopped) spdlog::warn("stop requested: saving the state at iteration {}", s.iteration);
  if (last_eval != s.iteration && !stopped) eval_now();
  if (last_checkpoint != s.iteration || on_any_rank(ranks, writer && !std::filesystem::exists(c.run.out + "/checkpoint"))) {
    checkpoint_now();
  }
  int model_iteration = s.iteration;
  if (writer && c.run.keep_best && best.iteration >= 0) {
    copy_model(complete_folder(best_dir, "best.json"), c.run.out + "/model");
    model_iteration = best.iteration;
    spdlog::info("model: the actor of iteration {} (progression {:.3f}, the best evaluation); the last one is in {}/checkpoint/actor",
                 best.iteration, best.progression, c.run.out);
  } else if (writer) {
    save_model(c.run.out + "/model", l, s.base_model());
  }
  // With keep_best the evaluation seeds chose the model, so its score on them reads high: score it
  // once more on seeds that took no part in the choice, decoded as the run's evaluations are.
  if (writer && c.run.has_final_eval() && !stopped) {
    const std::unique_ptr<agents::Agent> model = make_policy_agent(agents::LanguageModel::load(c.run.out + "/model", c.model.device), c,
                                                                    c.run.eval_decoding == "greedy", c.run.seed);
    metrics << score_actor(*model, "final", model_iteration, c.run.final_eval_seed, c.run.final_episodes(), nullptr).dump() << "\n"
            << std::flush;
  }
  if (ranks) ranks->barrier();  // every rank returns once the run is saved
  spdlog::info("done: {} iterations in {:.1f} min ({:.1f} min with the format stage and loading); model in {}/model, metrics in "
               "{}/metrics.jsonl, curve in {}/curve.svg",
               s.iteration, elapsed() / 60.0, (s.setup_seconds + elapsed()) / 60.0, c.run.out, c.run.out, c.run.out);
}

}  // namespace turnrl::trainer
