#include "trainer/ppo_trainer.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <random>
#include <sstream>

#include <nlohmann/json.hpp>

#include "agents/compute_threads.h"
#include "agents/generation.h"
#include "agents/llm_agent.h"
#include "agents/model_presets.h"
#include "agents/qwen2_model.h"
#include "agents/tokenizer.h"
#include "envs/registry.h"
#include "trainer/acting.h"
#include "trainer/advantages.h"
#include "trainer/checkpoint.h"
#include "trainer/episode_runner.h"
#include "trainer/learning_curve.h"
#include "trainer/ppo_loss.h"
#include "trainer/rollout.h"

namespace turnrl::trainer {
namespace {

using Clock = std::chrono::steady_clock;

constexpr int64_t kScoringChunk = 256;

/** Per-turn training targets, aligned with RolloutBatch::turns. */
struct Prepared {
  std::vector<std::vector<float>> old_logprobs;  // L
  std::vector<std::vector<float>> old_values;    // L + 1
  std::vector<std::vector<float>> advantages;    // L (whitened)
  std::vector<std::vector<float>> returns;       // L + 1
  double kl_reasoning = 0.0, kl_action = 0.0;    // mean k1 KL of reasoning / action tokens
  double mean_value = 0.0;
};

/** Copies the right-aligned last `n` entries of each row of a [B, W] tensor. */
std::vector<float> row_tail(const torch::Tensor& rows, int64_t b, size_t n) {
  const int64_t width = rows.size(1);
  std::vector<float> out(n);
  for (size_t j = 0; j < n; ++j) out[j] = rows[b][width - static_cast<int64_t>(n) + static_cast<int64_t>(j)].item<float>();
  return out;
}

/** Right-aligns per-row vectors into a [B, width] tensor (zeros elsewhere). */
torch::Tensor right_aligned(const std::vector<const std::vector<float>*>& rows, int64_t width) {
  torch::Tensor out = torch::zeros({static_cast<int64_t>(rows.size()), width});
  auto a = out.accessor<float, 2>();
  for (size_t b = 0; b < rows.size(); ++b) {
    const auto& row = *rows[b];
    for (size_t j = 0; j < row.size(); ++j) a[b][width - static_cast<int64_t>(row.size()) + static_cast<int64_t>(j)] = row[j];
  }
  return out;
}

/** Greedy success, reward and length of one task's evaluation episodes. */
struct EvalResult {
  std::string task;
  double success = 0.0, mean_reward = 0.0, mean_length = 0.0;
};

/** `episodes` episodes per task on seeds first_seed, first_seed + 1, ..., all tasks at once
 *  through the evaluation sweeps' episode runner; one result per task, in config order. */
std::vector<EvalResult> evaluate(const TrainConfig& config, agents::Agent& agent, uint64_t first_seed, int episodes) {
  const size_t tasks = config.env.ids.size();
  std::vector<EvalResult> results(tasks);
  std::vector<EpisodeJob> jobs;
  for (size_t k = 0; k < tasks; ++k) {
    results[k].task = config.env.ids[k];
    for (int i = 0; i < episodes; ++i) jobs.push_back({config.env.ids[k], first_seed + i, k});
  }
  if (jobs.empty()) return results;
  EpisodeRunnerConfig runner;
  runner.parallel_episodes = static_cast<int>(jobs.size());
  runner.batch_size = (jobs.size() + 1) / 2;  // two batches in flight
  runner.history = history_config(config);
  runner.actions = action_config(config);
  run_episodes(
      jobs, [&](const std::string& id) { return envs::make_env(id, config.env.options); }, agent, runner,
      [&](EpisodeLog&& log) {
        EvalResult& result = results[log.job.key];
        result.success += log.progression / episodes;
        result.mean_reward += log.episode_return / episodes;
        result.mean_length += static_cast<double>(log.turns.size()) / episodes;
      });
  return results;
}

}  // namespace

struct PpoTrainer::Impl {
  TrainConfig config;
  torch::Device device{torch::kCPU};
  agents::Qwen2Model actor{nullptr}, critic{nullptr}, reference{nullptr};
  std::shared_ptr<agents::LanguageModel> policy;  // acts with the actor's live weights
  std::unique_ptr<agents::LlmAgent> sampler, greedy;
  std::unique_ptr<torch::optim::AdamW> actor_optimizer, critic_optimizer;
  std::unique_ptr<Rollout> rollout;
  std::vector<int32_t> allowed;
  Estimator estimator = Estimator::kGae;
  int iteration = 0;
  double elapsed_before = 0.0;  // seconds spent before a resume
  std::mt19937_64 shuffle_rng;
  std::vector<EvalPoint> curve;

  const agents::Tokenizer& tokenizer() const { return policy->tokenizer(); }

  std::vector<agents::ResponseBatch> chunks(const RolloutBatch& batch, std::vector<size_t>& starts) const {
    std::vector<agents::ResponseBatch> out;
    for (size_t start = 0; start < batch.turns.size(); start += kScoringChunk) {
      std::vector<std::vector<int32_t>> prompts, responses;
      for (size_t i = start; i < std::min(batch.turns.size(), start + kScoringChunk); ++i) {
        prompts.push_back(batch.turns[i].prompt_ids);
        responses.push_back(batch.turns[i].response_ids);
      }
      out.push_back(agents::make_response_batch(prompts, responses, tokenizer().pad_id(), device));
      starts.push_back(start);
    }
    return out;
  }

  Prepared prepare(const RolloutBatch& batch) {
    torch::NoGradGuard no_grad;
    const bool with_critic = estimator == Estimator::kGae;
    Prepared p;
    const size_t n = batch.turns.size();
    p.old_logprobs.resize(n);
    p.old_values.resize(n);
    std::vector<std::vector<float>> ref_logprobs(n);
    std::vector<size_t> starts;
    const auto batches = chunks(batch, starts);
    for (size_t c = 0; c < batches.size(); ++c) {
      const torch::Tensor old_lp = agents::response_logprobs(actor, batches[c], allowed).to(torch::kCPU);
      const torch::Tensor ref_lp = agents::response_logprobs(reference, batches[c], allowed).to(torch::kCPU);
      const torch::Tensor values = with_critic ? agents::response_values(critic, batches[c]).to(torch::kCPU) : torch::Tensor();
      for (int64_t b = 0; b < old_lp.size(0); ++b) {
        const size_t i = starts[c] + b;
        const size_t length = batch.turns[i].response_ids.size();
        p.old_logprobs[i] = row_tail(old_lp, b, length);
        ref_logprobs[i] = row_tail(ref_lp, b, length);
        if (with_critic) p.old_values[i] = row_tail(values, b, length + 1);
      }
    }
    // KL-in-reward: -kl_coef * (logp_old - logp_ref) on every response token.
    std::vector<std::vector<float>> penalties(n);
    double kl_reason = 0, kl_act = 0;
    int64_t n_reason = 0, n_act = 0;
    for (size_t i = 0; i < n; ++i) {
      const TurnRecord& turn = batch.turns[i];
      const int action_start = action_token_start(turn.response_ids, tokenizer(), config.sampling.action_tokens_only);
      for (size_t k = 0; k < turn.response_ids.size(); ++k) {
        const double kl = p.old_logprobs[i][k] - ref_logprobs[i][k];
        penalties[i].push_back(static_cast<float>(-config.ppo.kl_coef * kl));
        const bool action_token = static_cast<int>(k) >= action_start;
        (action_token ? kl_act : kl_reason) += kl;
        ++(action_token ? n_act : n_reason);
      }
    }
    p.kl_reasoning = n_reason ? kl_reason / n_reason : 0.0;
    p.kl_action = n_act ? kl_act / n_act : 0.0;
    p.advantages.resize(n);
    p.returns.resize(n);
    if (with_critic) {
      gae_targets(batch, penalties, p);
    } else {
      sample_targets(batch, penalties, p);
    }
    return p;
  }

  /** Dual-discount GAE per slot with the critic's values and V(s_T+1) bootstraps; advantages whitened.
   *  Token rewards: the KL penalties, plus the env reward on each turn's last token. */
  void gae_targets(const RolloutBatch& batch, const std::vector<std::vector<float>>& penalties, Prepared& p) {
    std::vector<std::optional<float>> bootstrap(batch.n_env);
    std::vector<std::vector<int32_t>> prompts;
    std::vector<int> slots;
    for (int s = 0; s < batch.n_env; ++s) {
      if (!batch.bootstrap[s]) continue;
      prompts.push_back(batch.bootstrap[s]->prompt_ids);
      slots.push_back(s);
    }
    if (!prompts.empty()) {
      const auto empty = std::vector<std::vector<int32_t>>(prompts.size());
      const torch::Tensor values =
          agents::response_values(critic, agents::make_response_batch(prompts, empty, tokenizer().pad_id(), device)).to(torch::kCPU);
      for (size_t j = 0; j < slots.size(); ++j) bootstrap[slots[j]] = values[static_cast<int64_t>(j)][0].item<float>();
    }
    const GaeParams gae{config.ppo.step_gamma, config.ppo.step_lambda, config.ppo.token_gamma, config.ppo.token_lambda};
    double value_sum = 0;
    for (int s = 0; s < batch.n_env; ++s) {
      std::vector<TurnSignals> signals;
      for (int t = 0; t < batch.e_len; ++t) {
        const size_t i = static_cast<size_t>(t) * batch.n_env + s;
        TurnSignals sig;
        sig.values = p.old_values[i];
        sig.rewards = penalties[i];
        if (!sig.rewards.empty()) sig.rewards.back() += static_cast<float>(batch.turns[i].reward);
        sig.rewards.push_back(0.0f);  // the state after the last token
        sig.done = batch.turns[i].done();
        value_sum += sig.values.front();
        signals.push_back(std::move(sig));
      }
      const auto targets = dual_discount_gae(signals, bootstrap[s], gae);
      for (int t = 0; t < batch.e_len; ++t) {
        const size_t i = static_cast<size_t>(t) * batch.n_env + s;
        p.advantages[i].assign(targets[t].advantages.begin(), targets[t].advantages.begin() + static_cast<long>(penalties[i].size()));
        p.returns[i] = targets[t].returns;
      }
    }
    std::vector<float*> entries;
    for (auto& row : p.advantages) {
      for (float& x : row) entries.push_back(&x);
    }
    whiten(entries);
    p.mean_value = value_sum / std::max<size_t>(1, batch.turns.size());
  }

  /** A critic-free estimator over the collection's episode segments (a slot's consecutive turns of
   *  one episode), grouped by start state: the task and episode seed. */
  void sample_targets(const RolloutBatch& batch, const std::vector<std::vector<float>>& penalties, Prepared& p) const {
    SampleRewards samples;
    std::vector<uint64_t> keys;
    std::vector<std::vector<size_t>> rows;  // turns of each sample, in order
    for (int s = 0; s < batch.n_env; ++s) {
      for (int t = 0; t < batch.e_len; ++t) {
        const size_t i = static_cast<size_t>(t) * batch.n_env + s;
        const TurnRecord& turn = batch.turns[i];
        if (t == 0 || batch.turns[i - batch.n_env].episode_id != turn.episode_id) {
          for (TokenRewards* stream : {&samples.outcome, &samples.process, &samples.penalty}) stream->emplace_back();
          keys.push_back(turn.episode_seed * config.env.ids.size() + task_of(s));
          rows.emplace_back();
        }
        const size_t length = penalties[i].size();
        samples.penalty.back().insert(samples.penalty.back().end(), penalties[i].begin(), penalties[i].end());
        for (TokenRewards* stream : {&samples.outcome, &samples.process}) stream->back().resize(stream->back().size() + length, 0.0f);
        if (length > 0) (turn.done() ? samples.outcome : samples.process).back().back() = static_cast<float>(turn.reward);
        rows.back().push_back(i);
      }
    }
    const TokenRewards advantages = sample_advantages(estimator, samples, keys, config.ppo.step_gamma);
    for (size_t j = 0; j < rows.size(); ++j) {
      auto from = advantages[j].begin();
      for (size_t i : rows[j]) {
        p.advantages[i].assign(from, from + static_cast<long>(penalties[i].size()));
        from += static_cast<long>(penalties[i].size());
      }
    }
  }

  /** Task index of a slot: the slots of an episode group share it. */
  size_t task_of(int slot) const {
    return static_cast<size_t>(slot / config.env.group_size) % config.env.ids.size();
  }

  /** One clipped value-loss step on a mini-batch: positions 0..L of each turn, the first weighted
   *  more (Verlog's highlight_first). Returns the loss. */
  torch::Tensor critic_step(const agents::ResponseBatch& mb, const std::vector<std::vector<int32_t>>& responses,
                            const std::vector<const std::vector<float>*>& old_v, const std::vector<const std::vector<float>*>& ret) {
    const int64_t r = mb.response_width, rows = static_cast<int64_t>(responses.size());
    const torch::Tensor values = agents::response_values(critic, mb);
    torch::Tensor value_mask = torch::zeros({rows, r + 1}, torch::kBool);
    torch::Tensor weights = torch::ones({rows, r + 1});
    for (int64_t b = 0; b < rows; ++b) {
      const int64_t first = r - static_cast<int64_t>(responses[b].size());
      value_mask[b].narrow(0, first, r + 1 - first).fill_(true);
      weights[b][first] = config.ppo.first_token_weight;
    }
    const torch::Tensor vl = value_loss(values, right_aligned(old_v, r + 1).to(device), right_aligned(ret, r + 1).to(device),
                                        value_mask.to(device), weights.to(device), config.ppo.value_clip);
    critic_optimizer->zero_grad();
    vl.backward();
    torch::nn::utils::clip_grad_norm_(critic->parameters(), config.ppo.grad_clip);
    critic_optimizer->step();
    return vl.detach().cpu();
  }

  /** PPO epochs over shuffled mini-batches; the actor only when `train_actor`. Returns metrics. */
  nlohmann::json update(const RolloutBatch& batch, const Prepared& p, bool train_actor, size_t max_rows) {
    std::vector<size_t> order(batch.turns.size());
    std::iota(order.begin(), order.end(), 0);
    std::shuffle(order.begin(), order.end(), shuffle_rng);
    if (max_rows < order.size()) order.resize(max_rows);
    torch::Tensor policy_loss_sum = torch::zeros({}), value_loss_sum = torch::zeros({}), entropy_sum = torch::zeros({});
    torch::Tensor clip_sum = torch::zeros({}), kl_sum = torch::zeros({});
    int steps = 0;
    const size_t minibatch = static_cast<size_t>(config.ppo.minibatch);
    for (int epoch = 0; epoch < config.ppo.epochs; ++epoch) {
      if (epoch > 0) std::shuffle(order.begin(), order.end(), shuffle_rng);
      for (size_t start = 0; start < order.size(); start += minibatch) {
        const size_t end = std::min(order.size(), start + minibatch);
        std::vector<std::vector<int32_t>> prompts, responses;
        std::vector<const std::vector<float>*> old_lp, adv, old_v, ret;
        for (size_t j = start; j < end; ++j) {
          const size_t i = order[j];
          prompts.push_back(batch.turns[i].prompt_ids);
          responses.push_back(batch.turns[i].response_ids);
          old_lp.push_back(&p.old_logprobs[i]);
          adv.push_back(&p.advantages[i]);
          old_v.push_back(&p.old_values[i]);
          ret.push_back(&p.returns[i]);
        }
        const agents::ResponseBatch mb = agents::make_response_batch(prompts, responses, tokenizer().pad_id(), device);
        const int64_t r = mb.response_width;
        if (train_actor && r > 0) {
          torch::Tensor entropy;
          const torch::Tensor logp = agents::response_logprobs(actor, mb, allowed, &entropy);
          const PolicyLoss pl = policy_loss(logp, right_aligned(old_lp, r).to(device), right_aligned(adv, r).to(device),
                                            mb.response_mask, {config.ppo.clip, config.ppo.dual_clip});
          const torch::Tensor entropy_mean = masked_mean(entropy, mb.response_mask);
          const torch::Tensor loss = pl.loss - config.ppo.entropy_coef * entropy_mean;
          actor_optimizer->zero_grad();
          loss.backward();
          torch::nn::utils::clip_grad_norm_(actor->parameters(), config.ppo.grad_clip);
          actor_optimizer->step();
          policy_loss_sum += pl.loss.detach().cpu();
          entropy_sum += entropy_mean.detach().cpu();
          clip_sum += pl.clip_fraction.cpu();
          kl_sum += pl.approx_kl.cpu();
        }
        if (estimator == Estimator::kGae) value_loss_sum += critic_step(mb, responses, old_v, ret);
        ++steps;
      }
    }
    const double denom = std::max(1, steps);
    nlohmann::json m;
    if (estimator == Estimator::kGae) m["value_loss"] = value_loss_sum.item<double>() / denom;
    if (train_actor) {
      m["policy_loss"] = policy_loss_sum.item<double>() / denom;
      m["entropy"] = entropy_sum.item<double>() / denom;
      m["clip_fraction"] = clip_sum.item<double>() / denom;
      m["ppo_kl"] = kl_sum.item<double>() / denom;
    }
    return m;
  }
};

PpoTrainer::PpoTrainer(TrainConfig config, const std::string& resume_dir) : impl_(std::make_unique<Impl>()) {
  Impl& s = *impl_;
  s.config = std::move(config);
  s.device = torch::Device(s.config.model.device);
  agents::set_compute_threads(s.config.model.threads);
  const std::string& path = s.config.model.path;
  if (!std::filesystem::exists(path + "/config.json")) {
    if (s.config.model.preset.empty()) {
      throw std::invalid_argument("model.path '" + path + "' holds no model (config.json) and model.preset is not set");
    }
    spdlog::info("creating a '{}' model in {}", s.config.model.preset, path);
    agents::write_new_model(s.config.model.preset, path, s.config.run.seed, "");
  }
  torch::manual_seed(s.config.run.seed);  // here, so the critic's head does not depend on whether the preset ran
  const std::string actor_dir = resume_dir.empty() ? path : resume_dir + "/actor";
  const std::string critic_dir = resume_dir.empty() ? path : resume_dir + "/critic";
  s.actor = agents::load_qwen2(actor_dir, false, s.device);
  s.critic = agents::load_qwen2(critic_dir, true, s.device);
  s.reference = agents::load_qwen2(path, false, s.device);
  s.reference->eval();
  for (auto& p : s.reference->parameters()) p.set_requires_grad(false);
  s.actor_optimizer = std::make_unique<torch::optim::AdamW>(
      s.actor->parameters(), torch::optim::AdamWOptions(s.config.ppo.actor_lr).weight_decay(s.config.ppo.weight_decay).eps(1e-5));
  s.critic_optimizer = std::make_unique<torch::optim::AdamW>(
      s.critic->parameters(), torch::optim::AdamWOptions(s.config.ppo.critic_lr).weight_decay(s.config.ppo.weight_decay).eps(1e-5));
  s.shuffle_rng.seed(s.config.run.seed);
  s.estimator = parse_estimator(s.config.ppo.estimator);
  s.policy = agents::LanguageModel::over(s.actor, agents::Tokenizer::load(path));
  s.allowed = action_vocabulary(s.config, s.tokenizer());
  s.sampler = std::make_unique<agents::LlmAgent>(s.policy, sampling_params(s.config, s.allowed, false, s.config.run.seed), "actor");
  s.greedy = std::make_unique<agents::LlmAgent>(s.policy, sampling_params(s.config, s.allowed, true, 0), "actor-greedy");
  const TrainConfig& c = s.config;
  RolloutConfig rollout;
  rollout.n_env = c.env.n_env;
  rollout.e_len = c.env.e_len;
  rollout.seed = c.run.seed;
  rollout.first_episode_seed = c.run.train_seed + c.run.seed * 10'000'000ULL;  // far from the evaluation seeds
  rollout.group_size = c.env.group_size;
  rollout.history = history_config(c);
  rollout.actions = action_config(c);
  s.rollout = std::make_unique<Rollout>(
      [&s](int slot) { return envs::make_env(s.config.env.ids[s.task_of(slot)], s.config.env.options); },
      *s.sampler, rollout);
  if (!resume_dir.empty()) {
    const CheckpointState state = load_checkpoint(resume_dir, *s.actor_optimizer, *s.critic_optimizer);
    s.iteration = state.iteration;
    s.elapsed_before = state.elapsed_seconds;
    s.rollout->restore(state.rollout);
    s.curve = state.curve;
    std::istringstream(state.shuffle_rng) >> s.shuffle_rng;
    spdlog::info("resumed from {} at iteration {}", resume_dir, s.iteration);
  }
}

PpoTrainer::~PpoTrainer() = default;

void PpoTrainer::train() {
  Impl& s = *impl_;
  const TrainConfig& c = s.config;
  std::filesystem::create_directories(c.run.out);
  {
    std::ofstream(c.run.out + "/config.yaml") << c.to_yaml();
  }
  // A resumed run continues the file; a fresh run in the same folder starts it anew.
  std::ofstream metrics(c.run.out + "/metrics.jsonl", s.iteration > 0 ? std::ios::app : std::ios::trunc);
  const auto start = Clock::now();
  auto elapsed = [&] { return s.elapsed_before + std::chrono::duration<double>(Clock::now() - start).count(); };
  auto eval_now = [&](int iteration) {
    if (c.run.eval_episodes <= 0) return;
    const std::vector<EvalResult> tasks = evaluate(c, *s.greedy, c.run.eval_seed, c.run.eval_episodes);
    double success = 0, reward = 0, length = 0;
    nlohmann::json per_task = nlohmann::json::object();
    std::vector<double> task_success;
    for (const EvalResult& task : tasks) {
      success += task.success / tasks.size();
      reward += task.mean_reward / tasks.size();
      length += task.mean_length / tasks.size();
      per_task[task.task] = task.success;
      task_success.push_back(task.success);
    }
    s.curve.push_back({elapsed() / 60.0, iteration, success, task_success});
    const nlohmann::json line = {{"type", "eval"},           {"iteration", iteration},     {"minutes", elapsed() / 60.0},
                                 {"greedy_success", success}, {"mean_reward", reward},      {"mean_length", length},
                                 {"episodes", c.run.eval_episodes}, {"task_success", per_task}};
    metrics << line.dump() << "\n" << std::flush;
    spdlog::info("eval  iter {:4d} | {:5.1f} min | greedy success {:.3f} on {} seeds from {} per task | mean length {:.1f}",
                 iteration, elapsed() / 60.0, success, c.run.eval_episodes, c.run.eval_seed, length);
    if (tasks.size() > 1) {
      for (const EvalResult& task : tasks) spdlog::info("      {:<28} greedy success {:.3f}", task.task, task.success);
    }
    write_learning_curve_svg(c.run.out + "/curve.svg", s.curve, c.env.ids);
  };

  if (s.iteration == 0) {
    eval_now(0);
    if (c.ppo.critic_warmup_iterations > 0 && s.estimator == Estimator::kGae) {
      // Warm-up: one large collection, the critic alone fitted on it several times.
      const RolloutBatch batch = s.rollout->collect(c.env.e_len * c.ppo.critic_warmup_multiplier);
      for (int w = 0; w < c.ppo.critic_warmup_iterations; ++w) {
        const Prepared p = s.prepare(batch);
        const nlohmann::json m = s.update(batch, p, false, static_cast<size_t>(c.env.n_env) * c.env.e_len * 4);
        metrics << nlohmann::json{{"type", "critic_warmup"}, {"step", w}, {"value_loss", m["value_loss"]}}.dump() << "\n";
        spdlog::info("critic warm-up {}/{} | value loss {:.4f}", w + 1, c.ppo.critic_warmup_iterations, m["value_loss"].get<double>());
      }
    }
  }

  while (s.iteration < c.run.iterations && (c.run.minutes <= 0 || elapsed() < c.run.minutes * 60.0)) {
    const auto iteration_start = Clock::now();
    const RolloutBatch batch = s.rollout->collect();
    const std::vector<EpisodeSummary>& finished = batch.finished_episodes;
    const double rollout_seconds = std::chrono::duration<double>(Clock::now() - iteration_start).count();
    const Prepared p = s.prepare(batch);
    nlohmann::json m = s.update(batch, p, true, batch.turns.size());
    ++s.iteration;
    double success = 0, reward = 0;
    for (const auto& e : finished) {
      success += e.progression;
      reward += e.episode_return;
    }
    int invalid_turns = 0;
    for (const auto& t : batch.turns) invalid_turns += !t.valid_action;
    const double seconds = std::chrono::duration<double>(Clock::now() - iteration_start).count();
    m["type"] = "train";
    m["iteration"] = s.iteration;
    m["minutes"] = elapsed() / 60.0;
    m["turns"] = batch.turns.size();
    m["turns_per_s"] = batch.turns.size() / seconds;
    m["rollout_share"] = rollout_seconds / seconds;
    m["episodes"] = finished.size();
    m["success"] = finished.empty() ? 0.0 : success / finished.size();
    m["episode_reward"] = finished.empty() ? 0.0 : reward / finished.size();
    m["invalid_rate"] = static_cast<double>(invalid_turns) / batch.turns.size();
    m["kl_reasoning"] = p.kl_reasoning;
    m["kl_action"] = p.kl_action;
    m["mean_value"] = p.mean_value;
    metrics << m.dump() << "\n" << std::flush;
    const double per_iteration = elapsed() / std::max(1, s.iteration);
    double eta = (c.run.iterations - s.iteration) * per_iteration;
    if (c.run.minutes > 0) eta = std::min(eta, c.run.minutes * 60.0 - elapsed());
    spdlog::info("iter {:4d}/{} | {:6.0f} turns/s | success {:.3f} ({} eps) | reward {:+.3f} | KL {:+.5f} | pi {:+.4f} | v {:.4f} | ent {:.3f} | ETA {:.1f} min",
                 s.iteration, c.run.iterations, m["turns_per_s"].get<double>(), m["success"].get<double>(), finished.size(),
                 m["episode_reward"].get<double>(), p.kl_action, m.value("policy_loss", 0.0), m.value("value_loss", 0.0),
                 m.value("entropy", 0.0), std::max(0.0, eta) / 60.0);
    if (s.iteration % c.run.eval_every == 0) eval_now(s.iteration);
    if (s.iteration % c.run.checkpoint_every == 0) {
      std::ostringstream rng;
      rng << s.shuffle_rng;
      save_checkpoint(c.run.out + "/checkpoint", s.actor, s.critic, *s.actor_optimizer, *s.critic_optimizer,
                      CheckpointState{s.iteration, elapsed(), s.rollout->state(), rng.str(), s.curve},
                      c.to_yaml());
    }
  }
  if (s.iteration % c.run.eval_every != 0) eval_now(s.iteration);
  spdlog::info("done: {} iterations in {:.1f} min; metrics in {}/metrics.jsonl, curve in {}/curve.svg", s.iteration,
               elapsed() / 60.0, c.run.out, c.run.out);
}

}  // namespace turnrl::trainer
