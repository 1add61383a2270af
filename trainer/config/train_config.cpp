#include "trainer/config/train_config.h"

#include <algorithm>
#include <stdexcept>

#include <spdlog/fmt/fmt.h>
#include <yaml-cpp/yaml.h>

#include "agents/model/model_presets.h"
#include "agents/reply_template.h"
#include "envs/registry.h"
#include "trainer/algo/advantages.h"
#include "trainer/sft/lr_schedule.h"
#include "trainer/rollout/worker_pool.h"

namespace turnrl::trainer {
namespace {

/** `manager`: env or episode, alone or listed with process. */
void read_reward_managers(ConfigSection& reward, TrainConfig::Reward& out) {
  if (!reward.has("manager")) return;
  std::vector<std::string> names;
  reward.read_string_list("manager", names);
  const char* rule = "must be env or episode, or a list of one of them and process (e.g. [episode, process])";
  std::vector<std::string> outcome;
  for (const std::string& name : names) {
    if (name == "process") {
      if (out.process) reward.fail("manager", "lists process twice");
      out.process = true;
    } else if (name == "env" || name == "episode") {
      outcome.push_back(name);
    } else {
      reward.fail("manager", std::string(rule) + ", got '" + name + "'");
    }
  }
  if (outcome.size() != 1) reward.fail("manager", rule);
  out.manager = outcome.front();
}

void read_process_rewards(ConfigSection section, rewards::ProcessRewardConfig& out) {
  section.read_string_list("markers", out.segmentation.markers);
  for (const std::string& marker : out.segmentation.markers) {
    if (marker.empty()) section.fail("markers", "must not hold an empty marker");
  }
  section.read("max_segment_tokens", out.segmentation.max_segment_tokens, positive<size_t>(), "must be > 0");
  section.read("answer_prompt", out.answer_prompt);
  section.read("batch_prefixes", out.batch_prefixes, positive<size_t>(), "must be > 0");
  section.read("weight", out.weight, positive<double>(), "must be > 0");
  section.finish();
}

void read_scorer(ConfigSection section, HttpScorerConfig& out) {
  section.read("url", out.url);
  if (out.url.empty()) section.fail("url", "is required (http://host:port/path)");
  try {
    agents::HttpUrl::parse(out.url, "http scorer");
  } catch (const std::invalid_argument& e) {
    section.fail("url", e.what());
  }
  section.read("concurrency", out.concurrency, positive<int>(), "must be > 0");
  section.read("timeout", out.retry.timeout_s, positive<double>(), "must be > 0 (seconds)");
  section.read("retries", out.retry.retries, non_negative<int>(), "must be >= 0");
  section.read("backoff", out.retry.backoff_s, non_negative<double>(), "must be >= 0 (seconds)");
  section.finish();
}

}  // namespace

TrainConfig TrainConfig::load(const std::string& path) {
  ConfigSection root(path, load_yaml_file(path), "");
  TrainConfig c;

  ConfigSection model = root.section("model");
  model.read("path", c.model.path);
  std::vector<std::string> presets = agents::preset_names();
  const std::string presets_message = "must be " + list_names(presets);
  presets.push_back("");  // none: model.path must hold a model
  model.read("preset", c.model.preset, one_of(presets), presets_message);
  model.read("initializer_range", c.model.initializer_range, non_negative<double>(), "must be >= 0 (0: the preset's)");
  model.read("device", c.model.device);
  model.read("threads", c.model.threads, positive<int>(), "must be > 0");
  model.finish();
  if (c.model.path.empty()) model.fail("path", "is required");
  if (c.model.initializer_range > 0 && c.model.preset.empty()) model.fail("initializer_range", "needs model.preset (it draws a new model)");

  ConfigSection format = root.section("format");
  format.read("model", c.format.model);
  format.read("reply_template", c.format.reply_template);
  format.read("policy", c.format.policy, one_of({"random", "expert"}), "must be random or expert");
  format.read("keyed_share", c.format.keyed_share, unit_interval(), "must be in [0, 1]");
  format.read("expert_noise", c.format.expert_noise, half_open_unit_interval(), "must be in [0, 1)");
  format.read("expert_sight", c.format.expert_sight, one_of({"full", "view"}), "must be full or view");
  format.read("min_progression", c.format.min_progression, unit_interval(), "must be in [0, 1]");
  format.read("episodes", c.format.episodes, positive<int>(), "must be > 0");
  format.read_string_list("tasks", c.format.tasks);
  format.read("epochs", c.format.epochs, positive<int>(), "must be > 0");
  format.read("lr", c.format.lr, positive<double>(), "must be > 0");
  format.read("lr_schedule", c.format.lr_schedule, one_of(lr_schedules()), "must be " + list_names(lr_schedules()));
  format.read("final_lr_schedule", c.format.final_lr_schedule, one_of(lr_schedules()), "must be " + list_names(lr_schedules()));
  format.read("batch_size", c.format.batch_size, positive<int>(), "must be > 0");
  format.read("dagger_rounds", c.format.dagger_rounds, non_negative<int>(), "must be >= 0");
  format.read("dagger_episodes", c.format.dagger_episodes, non_negative<int>(), "must be >= 0");
  format.read("dagger_epochs", c.format.dagger_epochs, positive<int>(), "must be > 0");
  format.finish();
  if (root.has("format") && c.format.model.empty()) format.fail("model", "is required (where the format stage's model goes)");
  if (c.format.reply_template.find("{action}") == std::string::npos) format.fail("reply_template", "must contain {action}");
  if (agents::asks_for_aim(c.format.reply_template) && c.format.policy != "expert") {
    format.fail("reply_template", "{aim} needs policy: expert (the expert's aim)");
  }
  if (c.format.expert_noise > 0.0 && c.format.policy != "expert") format.fail("expert_noise", "needs policy: expert");
  if (c.format.expert_sight != "full" && c.format.policy != "expert") format.fail("expert_sight", "needs policy: expert");
  if (c.format.dagger_rounds > 0) {
    if (c.format.policy != "expert") format.fail("dagger_rounds", "needs policy: expert (the expert labels the learner's states)");
    if (c.format.expert_noise > 0.0) format.fail("dagger_rounds", "needs expert_noise: 0 (the learner's play is the noise)");
    if (c.format.dagger_episodes <= 0) format.fail("dagger_episodes", "must be > 0 with dagger_rounds");
  }

  ConfigSection env = root.section("env");
  env.read_string_list("id", c.env.ids);
  for (const std::string& id : c.env.ids) {
    const std::vector<std::string> known = envs::env_ids();
    if (std::find(known.begin(), known.end(), id) == known.end()) {
      env.fail("id", "names an unknown environment '" + id + "' (see `turnrl envs`)");
    }
  }
  env.read_json("options", c.env.options);
  env.read("n_env", c.env.n_env, positive<int>(), "must be > 0");
  env.read("e_len", c.env.e_len, positive<int>(), "must be > 0");
  env.read("group_size", c.env.group_size, positive<int>(), "must be > 0");
  env.read_string_list("workers", c.env.workers);
  if (const std::string problem = worker_endpoints_problem(c.env.workers); !problem.empty()) env.fail("workers", problem);
  env.read("worker_timeout", c.env.worker_timeout, positive<double>(), "must be > 0 (seconds)");
  env.read("worker_heartbeat", c.env.worker_heartbeat, positive<double>(), "must be > 0 (seconds)");
  env.finish();
  for (const std::string& task : c.format.tasks) {
    if (std::find(c.env.ids.begin(), c.env.ids.end(), task) == c.env.ids.end()) {
      format.fail("tasks", "names '" + task + "', which is not one of env.id");
    }
  }
  if (c.env.n_env < static_cast<int64_t>(c.env.ids.size()) * c.env.group_size) {
    env.fail("n_env", "must be at least the number of tasks in env.id (" + std::to_string(c.env.ids.size()) +
                          ") times env.group_size (" + std::to_string(c.env.group_size) + ")");
  }
  if (c.env.n_env % c.env.group_size != 0) env.fail("group_size", "must divide env.n_env (" + std::to_string(c.env.n_env) + ")");

  c.turn = read_turn_settings(root.section("turn"));

  ConfigSection sampling = root.section("sampling");
  sampling.read("temperature", c.sampling.temperature, non_negative<double>(), "must be >= 0");
  sampling.read("top_p", c.sampling.top_p, unit_interval(), "must be in [0, 1]");
  sampling.read("max_response_tokens", c.sampling.max_response_tokens, positive<int>(), "must be > 0");
  sampling.read("action_tokens_only", c.sampling.action_tokens_only);
  sampling.read_string_list("extra_tokens", c.sampling.extra_tokens);
  sampling.finish();
  if (!c.sampling.extra_tokens.empty() && !c.sampling.action_tokens_only) {
    sampling.fail("extra_tokens", "widens action_tokens_only: set sampling.action_tokens_only to true");
  }

  ConfigSection ppo = root.section("ppo");
  ppo.read("actor_lr", c.ppo.actor_lr, positive<double>(), "must be > 0");
  ppo.read("critic_lr", c.ppo.critic_lr, positive<double>(), "must be > 0");
  ppo.read("weight_decay", c.ppo.weight_decay, non_negative<double>(), "must be >= 0");
  ppo.read("clip", c.ppo.clip, positive<double>(), "must be > 0");
  ppo.read("dual_clip", c.ppo.dual_clip);
  ppo.read("value_clip", c.ppo.value_clip, positive<double>(), "must be > 0");
  ppo.read("epochs", c.ppo.epochs, positive<int>(), "must be > 0");
  ppo.read("minibatch", c.ppo.minibatch, positive<int>(), "must be > 0");
  ppo.read("group_by_length", c.ppo.group_by_length);
  ppo.read("grad_clip", c.ppo.grad_clip, positive<double>(), "must be > 0");
  ppo.read("kl_coef", c.ppo.kl_coef, non_negative<double>(), "must be >= 0");
  ppo.read("entropy_coef", c.ppo.entropy_coef, non_negative<double>(), "must be >= 0");
  ppo.read("anchor_kl_coef", c.ppo.anchor_kl_coef, non_negative<double>(), "must be >= 0");
  ppo.read("step_gamma", c.ppo.step_gamma, unit_interval(), "must be in [0, 1]");
  ppo.read("step_lambda", c.ppo.step_lambda, unit_interval(), "must be in [0, 1]");
  ppo.read("token_gamma", c.ppo.token_gamma, unit_interval(), "must be in [0, 1]");
  ppo.read("token_lambda", c.ppo.token_lambda, unit_interval(), "must be in [0, 1]");
  const std::vector<std::string> estimators = {"gae", "reinforce++", "grpo", "token_grpo", "rloo", "gigpo"};
  ppo.read("estimator", c.ppo.estimator, one_of(estimators), "must be " + list_names(estimators));
  if (uses_groups(parse_estimator(c.ppo.estimator)) && c.env.group_size < 2) {
    ppo.fail("estimator", "'" + c.ppo.estimator + "' compares episodes of one start state: set env.group_size >= 2");
  }
  ppo.read("first_token_weight", c.ppo.first_token_weight, positive<double>(), "must be > 0");
  ppo.read("critic_warmup_iterations", c.ppo.critic_warmup_iterations, non_negative<int>(), "must be >= 0");
  ppo.read("critic_warmup_multiplier", c.ppo.critic_warmup_multiplier, positive<int>(), "must be > 0");
  ppo.read("gigpo_step_weight", c.ppo.gigpo_step_weight, non_negative<double>(), "must be >= 0");
  ppo.read("gigpo_gamma", c.ppo.gigpo_gamma, unit_interval(), "must be in [0, 1]");
  ppo.read("gigpo_mean_norm", c.ppo.gigpo_mean_norm);
  ppo.finish();
  const int64_t batch_turns = static_cast<int64_t>(c.env.n_env) * c.env.e_len;
  if (c.ppo.minibatch > batch_turns) {
    ppo.fail("minibatch", "must be at most the batch of env.n_env x env.e_len = " + std::to_string(batch_turns) + " turns, got " +
                              std::to_string(c.ppo.minibatch));
  }

  ConfigSection reward = root.section("reward");
  read_reward_managers(reward, c.reward);
  reward.read("normalize_by_length", c.reward.normalize_by_length);
  reward.read("dynamic_sampling_tries", c.reward.dynamic_sampling_tries, non_negative<int>(), "must be >= 0 (0: off)");
  reward.read("streaming", c.reward.streaming);
  if (reward.has("process") && !c.reward.process) reward.fail("process", "configures process rewards: list process in reward.manager");
  read_process_rewards(reward.section("process"), c.reward.process_rewards);
  if (reward.has("scorer")) read_scorer(reward.section("scorer"), c.reward.scorer);
  reward.finish();
  if (c.reward.dynamic_sampling_tries > 0 && !uses_groups(parse_estimator(c.ppo.estimator))) {
    reward.fail("dynamic_sampling_tries", "drops groups without signal: set ppo.estimator to a group estimator (grpo, token_grpo, rloo, gigpo)");
  }
  if (c.reward.normalize_by_length && c.reward.manager != "episode") {
    reward.fail("normalize_by_length", "applies to reward.manager: episode only");
  }
  if (c.reward.process && (c.ppo.estimator == "grpo" || c.ppo.estimator == "gigpo")) {
    reward.fail("manager", "process rewards need an estimator that keeps token rewards (gae, reinforce++, token_grpo, rloo), not " +
                               c.ppo.estimator + ", which sums each turn's rewards");
  }

  ConfigSection run = root.section("run");
  run.read("iterations", c.run.iterations, positive<int>(), "must be > 0");
  run.read("minutes", c.run.minutes, non_negative<double>(), "must be >= 0");
  run.read("total_minutes", c.run.total_minutes, non_negative<double>(), "must be >= 0");
  run.read("seed", c.run.seed);
  run.read("out", c.run.out);
  run.read("checkpoint_every", c.run.checkpoint_every, positive<int>(), "must be > 0");
  run.read("eval_every", c.run.eval_every, positive<int>(), "must be > 0");
  run.read("eval_episodes", c.run.eval_episodes, non_negative<int>(), "must be >= 0");
  run.read("eval_seed", c.run.eval_seed);
  run.read("eval_decoding", c.run.eval_decoding, one_of({"greedy", "sampled"}), "must be greedy or sampled");
  run.read("keep_best", c.run.keep_best);
  if (c.run.keep_best && c.run.eval_episodes == 0) run.fail("keep_best", "needs evaluations (eval_episodes > 0) to pick the best actor");
  run.read("final_eval_seed", c.run.final_eval_seed);
  run.read("final_eval_episodes", c.run.final_eval_episodes, non_negative<int>(), "must be >= 0");
  run.read("train_seed", c.run.train_seed);
  if (c.run.overlaps_training_seeds(c.run.eval_seed, static_cast<uint64_t>(c.run.eval_episodes))) {
    run.fail("eval_seed", fmt::format("evaluation seeds {}..{} overlap the training seeds {}..{} (train_seed + seed * {})",
                                      c.run.eval_seed, c.run.eval_seed + c.run.eval_episodes - 1, c.run.first_training_seed(),
                                      c.run.first_training_seed() + TrainConfig::Run::kTrainingSeedSpan - 1,
                                      TrainConfig::Run::kTrainingSeedSpan));
  }
  const uint64_t episodes = static_cast<uint64_t>(c.run.eval_episodes);
  const uint64_t final_episodes = static_cast<uint64_t>(c.run.final_episodes());
  if (c.run.has_final_eval() && TrainConfig::Run::seed_blocks_overlap(c.run.final_eval_seed, final_episodes, c.run.eval_seed, episodes)) {
    run.fail("final_eval_seed", fmt::format("final evaluation seeds {}..{} overlap the periodic evaluation seeds {}..{}",
                                            c.run.final_eval_seed, c.run.final_eval_seed + final_episodes - 1, c.run.eval_seed,
                                            c.run.eval_seed + episodes - 1));
  }
  if (c.run.has_final_eval() && c.run.overlaps_training_seeds(c.run.final_eval_seed, final_episodes)) {
    run.fail("final_eval_seed", fmt::format("final evaluation seeds {}..{} overlap the training seeds from {}", c.run.final_eval_seed,
                                            c.run.final_eval_seed + final_episodes - 1, c.run.first_training_seed()));
  }
  run.finish();
  root.finish();
  return c;
}

std::string TrainConfig::to_yaml() const {
  YAML::Emitter out;
  out << YAML::BeginMap;
  out << YAML::Key << "model" << YAML::Value << YAML::BeginMap << YAML::Key << "path" << YAML::Value << model.path
      << YAML::Key << "preset" << YAML::Value << model.preset << YAML::Key << "initializer_range" << YAML::Value
      << model.initializer_range << YAML::Key << "device" << YAML::Value << model.device
      << YAML::Key << "threads" << YAML::Value << model.threads << YAML::EndMap;
  if (!format.model.empty()) {
    out << YAML::Key << "format" << YAML::Value << YAML::BeginMap << YAML::Key << "model" << YAML::Value << format.model << YAML::Key
        << "reply_template" << YAML::Value << format.reply_template << YAML::Key << "policy" << YAML::Value << format.policy
        << YAML::Key << "keyed_share" << YAML::Value
        << format.keyed_share << YAML::Key << "expert_noise" << YAML::Value << format.expert_noise << YAML::Key << "expert_sight"
        << YAML::Value << format.expert_sight << YAML::Key
        << "min_progression" << YAML::Value << format.min_progression << YAML::Key << "episodes"
        << YAML::Value << format.episodes
        << YAML::Key << "epochs" << YAML::Value << format.epochs << YAML::Key << "lr" << YAML::Value << format.lr << YAML::Key
        << "lr_schedule" << YAML::Value << format.lr_schedule << YAML::Key
        << "batch_size" << YAML::Value << format.batch_size << YAML::Key << "dagger_rounds" << YAML::Value << format.dagger_rounds
        << YAML::Key << "dagger_episodes" << YAML::Value << format.dagger_episodes << YAML::Key << "dagger_epochs" << YAML::Value
        << format.dagger_epochs;
    if (!format.final_lr_schedule.empty()) out << YAML::Key << "final_lr_schedule" << YAML::Value << format.final_lr_schedule;
    if (!format.tasks.empty()) out << YAML::Key << "tasks" << YAML::Value << YAML::Flow << format.tasks;
    out << YAML::EndMap;
  }
  out << YAML::Key << "env" << YAML::Value << YAML::BeginMap << YAML::Key << "id" << YAML::Value << YAML::Flow << env.ids
      << YAML::Key << "options" << YAML::Value << YAML::Flow << YAML::Load(env.options.dump()) << YAML::Key << "n_env"
      << YAML::Value << env.n_env << YAML::Key << "e_len" << YAML::Value << env.e_len << YAML::Key << "group_size"
      << YAML::Value << env.group_size;
  // An empty list is no valid value of `workers` (absent means in-process), so it is left out.
  if (!env.workers.empty()) out << YAML::Key << "workers" << YAML::Value << YAML::Flow << env.workers;
  out << YAML::Key << "worker_timeout" << YAML::Value << env.worker_timeout << YAML::Key << "worker_heartbeat" << YAML::Value
      << env.worker_heartbeat << YAML::EndMap;
  out << YAML::Key << "turn" << YAML::Value;
  emit_turn_settings(out, turn);
  out << YAML::Key << "sampling" << YAML::Value << YAML::BeginMap << YAML::Key << "temperature" << YAML::Value
      << sampling.temperature << YAML::Key << "top_p" << YAML::Value << sampling.top_p << YAML::Key
      << "max_response_tokens" << YAML::Value << sampling.max_response_tokens << YAML::Key << "action_tokens_only"
      << YAML::Value << sampling.action_tokens_only;
  // An empty list is no valid value of `extra_tokens` (absent means none), so it is left out.
  if (!sampling.extra_tokens.empty()) out << YAML::Key << "extra_tokens" << YAML::Value << YAML::Flow << sampling.extra_tokens;
  out << YAML::EndMap;
  out << YAML::Key << "ppo" << YAML::Value << YAML::BeginMap;
  const std::pair<const char*, double> doubles[] = {
      {"actor_lr", ppo.actor_lr},         {"critic_lr", ppo.critic_lr},     {"weight_decay", ppo.weight_decay},
      {"clip", ppo.clip},                 {"dual_clip", ppo.dual_clip},     {"value_clip", ppo.value_clip},
      {"grad_clip", ppo.grad_clip},       {"kl_coef", ppo.kl_coef},         {"entropy_coef", ppo.entropy_coef},
      {"anchor_kl_coef", ppo.anchor_kl_coef},
      {"step_gamma", ppo.step_gamma},     {"step_lambda", ppo.step_lambda}, {"token_gamma", ppo.token_gamma},
      {"token_lambda", ppo.token_lambda}, {"first_token_weight", ppo.first_token_weight},
      {"gigpo_step_weight", ppo.gigpo_step_weight}, {"gigpo_gamma", ppo.gigpo_gamma}};
  for (const auto& [key, value] : doubles) out << YAML::Key << key << YAML::Value << value;
  out << YAML::Key << "epochs" << YAML::Value << ppo.epochs << YAML::Key << "minibatch" << YAML::Value << ppo.minibatch
      << YAML::Key << "group_by_length" << YAML::Value << ppo.group_by_length
      << YAML::Key << "estimator" << YAML::Value << ppo.estimator << YAML::Key << "critic_warmup_iterations" << YAML::Value
      << ppo.critic_warmup_iterations << YAML::Key << "critic_warmup_multiplier" << YAML::Value
      << ppo.critic_warmup_multiplier << YAML::Key << "gigpo_mean_norm" << YAML::Value << ppo.gigpo_mean_norm << YAML::EndMap;
  out << YAML::Key << "reward" << YAML::Value << YAML::BeginMap << YAML::Key << "manager" << YAML::Value;
  if (reward.process) {
    out << YAML::Flow << std::vector<std::string>{reward.manager, "process"};
  } else {
    out << reward.manager;
  }
  out << YAML::Key << "normalize_by_length" << YAML::Value << reward.normalize_by_length << YAML::Key << "dynamic_sampling_tries"
      << YAML::Value << reward.dynamic_sampling_tries << YAML::Key << "streaming" << YAML::Value << reward.streaming;
  if (reward.process) {
    const rewards::ProcessRewardConfig& process = reward.process_rewards;
    out << YAML::Key << "process" << YAML::Value << YAML::BeginMap << YAML::Key << "markers" << YAML::Value << YAML::Flow
        << process.segmentation.markers << YAML::Key << "max_segment_tokens" << YAML::Value << process.segmentation.max_segment_tokens
        << YAML::Key << "answer_prompt" << YAML::Value << YAML::DoubleQuoted << process.answer_prompt << YAML::Key
        << "batch_prefixes" << YAML::Value << process.batch_prefixes << YAML::Key << "weight" << YAML::Value << process.weight
        << YAML::EndMap;
  }
  if (!reward.scorer.url.empty()) {
    out << YAML::Key << "scorer" << YAML::Value << YAML::BeginMap << YAML::Key << "url" << YAML::Value << reward.scorer.url
        << YAML::Key << "concurrency" << YAML::Value << reward.scorer.concurrency << YAML::Key << "timeout" << YAML::Value
        << reward.scorer.retry.timeout_s << YAML::Key << "retries" << YAML::Value << reward.scorer.retry.retries << YAML::Key
        << "backoff" << YAML::Value << reward.scorer.retry.backoff_s << YAML::EndMap;
  }
  out << YAML::EndMap;
  out << YAML::Key << "run" << YAML::Value << YAML::BeginMap << YAML::Key << "iterations" << YAML::Value << run.iterations
      << YAML::Key << "minutes" << YAML::Value << run.minutes << YAML::Key << "total_minutes" << YAML::Value << run.total_minutes
      << YAML::Key << "seed" << YAML::Value << run.seed << YAML::Key
      << "out" << YAML::Value << run.out << YAML::Key << "checkpoint_every" << YAML::Value << run.checkpoint_every
      << YAML::Key << "eval_every" << YAML::Value << run.eval_every << YAML::Key << "eval_episodes" << YAML::Value
      << run.eval_episodes << YAML::Key << "eval_seed" << YAML::Value << run.eval_seed << YAML::Key << "eval_decoding" << YAML::Value << run.eval_decoding
      << YAML::Key << "keep_best" << YAML::Value << run.keep_best << YAML::Key << "final_eval_seed" << YAML::Value
      << run.final_eval_seed << YAML::Key << "final_eval_episodes" << YAML::Value << run.final_eval_episodes << YAML::Key << "train_seed"
      << YAML::Value << run.train_seed << YAML::EndMap;
  out << YAML::EndMap;
  return out.c_str();
}

}  // namespace turnrl::trainer
