#include "trainer/config/train_config.h"

#include <algorithm>
#include <stdexcept>

#include <spdlog/fmt/fmt.h>
#include <yaml-cpp/yaml.h>

#include "agents/model/model_presets.h"
#include "agents/reply_template.h"
#include "envs/registry.h"
#include "trainer/rollout/worker_pool.h"

namespace turnrl::trainer {
namespace {

using Model = TrainConfig::Model;
using Format = TrainConfig::Format;
using Env = TrainConfig::Env;
using Sampling = TrainConfig::Sampling;
using Ppo = TrainConfig::Ppo;
using Reward = TrainConfig::Reward;
using Run = TrainConfig::Run;

bool contains(const std::vector<std::string>& names, const std::string& name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

Schema<Model> model_keys() {
  const std::vector<std::string> presets = agents::preset_names();
  const Check<std::string> preset{[presets](const std::string& name) { return name.empty() || contains(presets, name); },
                                  "must be " + list_names(presets)};
  return {
      key("path", &Model::path, "the actor's (and critic's, reference's) initial model folder (required)"),
      key("preset", &Model::preset, "when set and path holds no model, `turnrl new-model` it there first", preset),
      key("initializer_range", &Model::initializer_range, "std of that new model's weights; 0: the preset's (0.02)",
          non_negative<double>("0: the preset's")),
      key("device", &Model::device, "cpu or cuda"),
      key("threads", &Model::threads, "compute threads", positive<int>()),
  };
}

void check_model(ConfigSection& section, const Model& m) {
  if (m.path.empty()) section.fail("path", "is required");
  if (m.initializer_range > 0 && m.preset.empty()) section.fail("initializer_range", "needs model.preset (it draws a new model)");
}

Schema<FormatPlay> format_play_keys() {
  const Check<std::string> has_action{[](const std::string& text) { return text.find("{action}") != std::string::npos; },
                                      "must contain {action}"};
  return {
      key("reply_template", &FormatPlay::reply_template, "the demonstrated reply: {action}, and {aim} (the expert's aim) before it",
          has_action),
      key("policy", &FormatPlay::policy, "who plays the stage's episodes: random actions or the env's scripted expert (envs/expert.h)"),
      key("keyed_share", &FormatPlay::keyed_share, "random policy: share of actions keyed on the observation", unit_interval()),
      key("expert_noise", &FormatPlay::expert_noise, "expert policy: share of turns played at random and not written",
          half_open_unit_interval()),
      key("expert_sight", &FormatPlay::expert_sight, "expert policy: what the expert reads, the whole state or only what the prompt shows"),
      key("min_progression", &FormatPlay::min_progression, "episodes ending below this progression are not written (1: only won ones)",
          unit_interval()),
  };
}

Schema<FineTuning> fine_tuning_keys() {
  return {
      key("epochs", &FineTuning::epochs, "passes over the demonstrations", positive<int>()),
      key("lr", &FineTuning::lr, "the fine-tuning's AdamW learning rate", positive<double>()),
      key("lr_schedule", &FineTuning::lr_schedule, "the learning rate of each of the stage's fine-tunings"),
      key("batch_size", &FineTuning::batch_size, "examples per fine-tuning step", positive<int>()),
  };
}

/** The stage's own keys around the play and fine-tuning keys (declared once, above). */
Schema<Format> format_keys() {
  Schema<Format> keys = {
      key("model", &Format::model, "the stage's output folder (required in a format section); a folder that holds a model is reused")};
  const auto append = [&keys](const Schema<Format>& more) { keys.insert(keys.end(), more.begin(), more.end()); };
  append(inherited_keys<Format>(format_play_keys()));
  append({key("episodes", &Format::episodes, "episodes played, on seeds at the top of the training block", positive<int>()),
          key("tasks", &Format::tasks, "the tasks the episodes are spread over, each one of env.id (unset: all of env.id)")});
  append(inherited_keys<Format>(fine_tuning_keys()));
  append({key("final_lr_schedule", &Format::final_lr_schedule, "the schedule of the stage's last fine-tuning (unset: lr_schedule)"),
          key("dagger_rounds", &Format::dagger_rounds, "DAgger rounds after the demonstrations (expert policy)", non_negative<int>()),
          key("dagger_episodes", &Format::dagger_episodes, "episodes the model plays in each DAgger round", non_negative<int>()),
          key("dagger_epochs", &Format::dagger_epochs, "passes over the aggregated labels in each DAgger round", positive<int>())});
  return keys;
}

void check_format(ConfigSection& section, const Format& f) {
  if (section.written() && f.model.empty()) section.fail("model", "is required (where the format stage's model goes)");
  const bool expert = f.policy == FormatPolicy::kExpert;
  if (agents::asks_for_aim(f.reply_template) && !expert) section.fail("reply_template", "{aim} needs policy: expert (the expert's aim)");
  if (f.expert_noise > 0.0 && !expert) section.fail("expert_noise", "needs policy: expert");
  if (f.expert_sight != envs::ExpertSight::kFull && !expert) section.fail("expert_sight", "needs policy: expert");
  if (f.dagger_rounds > 0) {
    if (!expert) section.fail("dagger_rounds", "needs policy: expert (the expert labels the learner's states)");
    if (f.expert_noise > 0.0) section.fail("dagger_rounds", "needs expert_noise: 0 (the learner's play is the noise)");
    if (f.dagger_episodes <= 0) section.fail("dagger_episodes", "must be > 0 with dagger_rounds");
  }
}

Schema<Env> env_keys() {
  return {
      key("id", &Env::ids, "the task, or a mix of tasks dealt to the run's slots group by group (`turnrl envs` lists them)"),
      key("options", &Env::options, "env options, e.g. {num_dists: 8}"),
      key("n_env", &Env::n_env, "rollout slots (episodes collected at once)", positive<int>()),
      key("e_len", &Env::e_len, "turns each slot plays per collection", positive<int>()),
      key("group_size", &Env::group_size, "slots per group sharing a start state (group estimators: >= 2); divides n_env",
          positive<int>()),
      key("workers", &Env::workers, "env servers (host:port) the slots are spread over (unset: in-process envs)"),
      key("worker_timeout", &Env::worker_timeout, "seconds a worker may take to answer before it counts as dead",
          positive<double>("seconds")),
      key("worker_heartbeat", &Env::worker_heartbeat, "seconds between pings of live workers and probes of dead ones",
          positive<double>("seconds")),
  };
}

void check_env(ConfigSection& section, const Env& env) {
  const std::vector<std::string> known = envs::env_ids();
  for (const std::string& id : env.ids) {
    if (!contains(known, id)) section.fail("id", "names an unknown environment '" + id + "' (see `turnrl envs`)");
  }
  if (const std::string problem = worker_endpoints_problem(env.workers); !problem.empty()) section.fail("workers", problem);
  if (env.n_env < static_cast<int64_t>(env.ids.size()) * env.group_size) {
    section.fail("n_env", "must be at least the number of tasks in env.id (" + std::to_string(env.ids.size()) +
                              ") times env.group_size (" + std::to_string(env.group_size) + ")");
  }
  if (env.n_env % env.group_size != 0) section.fail("group_size", "must divide env.n_env (" + std::to_string(env.n_env) + ")");
}

Schema<Sampling> sampling_keys() {
  return {
      key("temperature", &Sampling::temperature, "sampling temperature of training's replies", non_negative<double>()),
      key("top_p", &Sampling::top_p, "nucleus sampling's probability mass", unit_interval()),
      key("max_response_tokens", &Sampling::max_response_tokens, "reply length limit in tokens", positive<int>()),
      key("action_tokens_only", &Sampling::action_tokens_only, "constrain decoding to the tokens of the action names"),
      key("extra_tokens", &Sampling::extra_tokens, "with action_tokens_only: words allowed besides them, each one token"),
  };
}

void check_sampling(ConfigSection& section, const Sampling& s) {
  if (!s.extra_tokens.empty() && !s.action_tokens_only) {
    section.fail("extra_tokens", "widens action_tokens_only: set sampling.action_tokens_only to true");
  }
}

Schema<Ppo> ppo_keys() {
  return {
      key("actor_lr", &Ppo::actor_lr, "actor learning rate", positive<double>()),
      key("critic_lr", &Ppo::critic_lr, "critic learning rate", positive<double>()),
      key("weight_decay", &Ppo::weight_decay, "AdamW weight decay", non_negative<double>()),
      key("clip", &Ppo::clip, "PPO's ratio clip", positive<double>()),
      key("dual_clip", &Ppo::dual_clip, "dual-clip bound on negative advantages"),
      key("value_clip", &Ppo::value_clip, "clip of the critic's value change", positive<double>()),
      key("epochs", &Ppo::epochs, "passes over each batch", positive<int>()),
      key("minibatch", &Ppo::minibatch, "turns per mini-batch (at most env.n_env x env.e_len)", positive<int>()),
      key("group_by_length", &Ppo::group_by_length, "mini-batches of rows of like length, in shuffled order"),
      key("grad_clip", &Ppo::grad_clip, "gradient norm clip", positive<double>()),
      key("kl_coef", &Ppo::kl_coef, "KL penalty on the sampled reply, in the reward", non_negative<double>()),
      key("entropy_coef", &Ppo::entropy_coef, "entropy bonus", non_negative<double>()),
      key("anchor_kl_coef", &Ppo::anchor_kl_coef, "loss weight of KL(reference || actor) over the whole vocabulary",
          non_negative<double>()),
      key("step_gamma", &Ppo::step_gamma, "discount between turns", unit_interval()),
      key("step_lambda", &Ppo::step_lambda, "GAE lambda between turns", unit_interval()),
      key("token_gamma", &Ppo::token_gamma, "discount within a reply", unit_interval()),
      key("token_lambda", &Ppo::token_lambda, "GAE lambda within a reply", unit_interval()),
      key("estimator", &Ppo::estimator, "advantage estimator: gae uses the critic, the others are critic-free"),
      key("first_token_weight", &Ppo::first_token_weight, "loss weight of a reply's first token", positive<double>()),
      key("critic_warmup_iterations", &Ppo::critic_warmup_iterations, "iterations that train the critic alone",
          non_negative<int>()),
      key("critic_warmup_multiplier", &Ppo::critic_warmup_multiplier, "critic epochs per actor epoch during the warm-up",
          positive<int>()),
      key("gigpo_step_weight", &Ppo::gigpo_step_weight, "GiGPO's omega: weight of the step advantage", non_negative<double>()),
      key("gigpo_gamma", &Ppo::gigpo_gamma, "GiGPO's discount of step returns", unit_interval()),
      key("gigpo_mean_norm", &Ppo::gigpo_mean_norm, "GiGPO: normalise by the mean only"),
  };
}

/** `manager`: env or episode, alone or listed with process (which sets `process`). */
Key<Reward> manager_key() {
  const char* rule = "must be env or episode, or a list of one of them and process (e.g. [episode, process])";
  return {"manager",
          [rule](ConfigSection& section, Reward& out) {
            if (!section.has("manager")) return;
            std::vector<std::string> names;
            section.read_string_list("manager", names);
            std::vector<std::string> outcome;
            for (const std::string& name : names) {
              if (name == "process") {
                if (out.process) section.fail("manager", "lists process twice");
                out.process = true;
              } else if (parse_enum<Reward::Manager>(name)) {
                outcome.push_back(name);
              } else {
                section.fail("manager", std::string(rule) + ", got '" + name + "'");
              }
            }
            if (outcome.size() != 1) section.fail("manager", rule);
            out.manager = *parse_enum<Reward::Manager>(outcome.front());
          },
          [](YAML::Emitter& out, const Reward& r) {
            out << YAML::Key << "manager" << YAML::Value;
            if (r.process) {
              out << YAML::Flow << std::vector<std::string>{enum_name(r.manager), "process"};
            } else {
              out << enum_name(r.manager);
            }
          },
          [](std::vector<KeyInfo>& rows, const std::string& prefix, const Reward& defaults) {
            rows.push_back({prefix + "manager", "env | episode, or a list of one of them and process", value_text(defaults.manager),
                            "env: each turn's reward on its last token; episode: the episode's sum on its last; process: add process rewards"});
          }};
}

Schema<rewards::ProcessRewardConfig> process_keys() {
  using Process = rewards::ProcessRewardConfig;
  const Check<std::vector<std::string>> no_empty{
      [](const std::vector<std::string>& markers) { return !contains(markers, ""); }, "must not hold an empty marker"};
  return {
      key_at<Process>("markers", [](Process& p) -> auto& { return p.segmentation.markers; }, "text that ends a reply's segment",
                      no_empty),
      key_at<Process>("max_segment_tokens", [](Process& p) -> auto& { return p.segmentation.max_segment_tokens; },
                      "a segment's length at most, in tokens", positive<size_t>()),
      key("answer_prompt", &Process::answer_prompt, "text after a prefix that forces an answer now"),
      key("batch_prefixes", &Process::batch_prefixes, "prefixes per forward pass at most", positive<size_t>()),
      key("weight", &Process::weight, "multiplies every process reward", positive<double>()),
  };
}

Schema<HttpScorerConfig> scorer_keys() {
  return {
      key("url", &HttpScorerConfig::url, "the scorer's endpoint, http://host:port/path (required in a scorer section)"),
      key("concurrency", &HttpScorerConfig::concurrency, "requests in flight at once", positive<int>()),
      key_at<HttpScorerConfig>("timeout", [](HttpScorerConfig& s) -> auto& { return s.retry.timeout_s; },
                               "seconds a request may take", positive<double>("seconds")),
      key_at<HttpScorerConfig>("retries", [](HttpScorerConfig& s) -> auto& { return s.retry.retries; },
                               "retries of a failed request", non_negative<int>()),
      key_at<HttpScorerConfig>("backoff", [](HttpScorerConfig& s) -> auto& { return s.retry.backoff_s; },
                               "seconds before the first retry", non_negative<double>("seconds")),
  };
}

void check_scorer(ConfigSection& section, const HttpScorerConfig& scorer) {
  if (scorer.url.empty()) section.fail("url", "is required (http://host:port/path)");
  try {
    agents::HttpUrl::parse(scorer.url, "http scorer");
  } catch (const std::invalid_argument& e) {
    section.fail("url", e.what());
  }
}

Schema<Reward> reward_keys() {
  return {
      manager_key(),
      key("normalize_by_length", &Reward::normalize_by_length, "episode manager: divide the sum by the episode's turn count"),
      key("dynamic_sampling_tries", &Reward::dynamic_sampling_tries, "DAPO's dynamic sampling: collections per update at most",
          non_negative<int>("0: off")),
      key("streaming", &Reward::streaming, "score each sample as soon as it finishes, while the others generate"),
      section("process", &Reward::process_rewards, process_keys(), "process rewards (with process in manager)",
              SectionRules<Reward, rewards::ProcessRewardConfig>{.written = [](const Reward& r) { return r.process; }}),
      section("scorer", &Reward::scorer, scorer_keys(), "an external HTTP scorer of each sample",
              SectionRules<Reward, HttpScorerConfig>{.check = check_scorer,
                                                     .written = [](const Reward& r) { return !r.scorer.url.empty(); },
                                                     .only_when_present = true}),
  };
}

void check_reward(ConfigSection& section, const Reward& r) {
  if (section.has("process") && !r.process) section.fail("process", "configures process rewards: list process in reward.manager");
  if (r.normalize_by_length && r.manager != Reward::Manager::kEpisode) {
    section.fail("normalize_by_length", "applies to reward.manager: episode only");
  }
}

Schema<Run> run_keys() {
  return {
      key("iterations", &Run::iterations, "PPO iterations", positive<int>()),
      key("minutes", &Run::minutes, "PPO's wall-clock limit; 0: none", non_negative<double>()),
      key("total_minutes", &Run::total_minutes, "the whole run's wall-clock limit, format stage included; 0: none",
          non_negative<double>()),
      key("seed", &Run::seed, "the run's seed; it picks the run's block of training seeds"),
      key("out", &Run::out, "the run folder"),
      key("checkpoint_every", &Run::checkpoint_every, "iterations between checkpoints", positive<int>()),
      key("eval_every", &Run::eval_every, "iterations between evaluations", positive<int>()),
      key("eval_episodes", &Run::eval_episodes, "evaluation episodes per task", non_negative<int>()),
      key("eval_seed", &Run::eval_seed, "first evaluation seed (outside the training block)"),
      key("eval_decoding", &Run::eval_decoding, "how evaluations decode: greedy, or sampled as in training"),
      key("keep_best", &Run::keep_best, "RUN/model is the evaluated actor of highest progression rather than the last"),
      key("final_eval_seed", &Run::final_eval_seed, "first seed of the final evaluation"),
      key("final_eval_episodes", &Run::final_eval_episodes, "final evaluation episodes per task; 0: eval_episodes with keep_best, else none",
          non_negative<int>()),
      key("train_seed", &Run::train_seed, "training seeds start at train_seed + seed * 10000000"),
  };
}

void check_run(ConfigSection& section, const Run& run) {
  if (run.keep_best && run.eval_episodes == 0) section.fail("keep_best", "needs evaluations (eval_episodes > 0) to pick the best actor");
  if (run.overlaps_training_seeds(run.eval_seed, static_cast<uint64_t>(run.eval_episodes))) {
    section.fail("eval_seed", fmt::format("evaluation seeds {}..{} overlap the training seeds {}..{} (train_seed + seed * {})",
                                          run.eval_seed, run.eval_seed + run.eval_episodes - 1, run.first_training_seed(),
                                          run.first_training_seed() + Run::kTrainingSeedSpan - 1, Run::kTrainingSeedSpan));
  }
  const uint64_t episodes = static_cast<uint64_t>(run.eval_episodes);
  const uint64_t final_episodes = static_cast<uint64_t>(run.final_episodes());
  if (run.has_final_eval() && Run::seed_blocks_overlap(run.final_eval_seed, final_episodes, run.eval_seed, episodes)) {
    section.fail("final_eval_seed", fmt::format("final evaluation seeds {}..{} overlap the periodic evaluation seeds {}..{}",
                                                run.final_eval_seed, run.final_eval_seed + final_episodes - 1, run.eval_seed,
                                                run.eval_seed + episodes - 1));
  }
  if (run.has_final_eval() && run.overlaps_training_seeds(run.final_eval_seed, final_episodes)) {
    section.fail("final_eval_seed", fmt::format("final evaluation seeds {}..{} overlap the training seeds from {}", run.final_eval_seed,
                                                run.final_eval_seed + final_episodes - 1, run.first_training_seed()));
  }
}

const Schema<TrainConfig>& train_schema() {
  using C = TrainConfig;
  static const Schema<C> schema = {
      section("model", &C::model, model_keys(), "the policy's model", SectionRules<C, Model>{.check = check_model}),
      section("format", &C::format, format_keys(), "the format stage: supervised fine-tuning on template replies before PPO",
              SectionRules<C, Format>{.check = check_format, .written = [](const C& c) { return !c.format.model.empty(); }}),
      section("env", &C::env, env_keys(), "the environments", SectionRules<C, Env>{.check = check_env}),
      section("turn", &C::turn, turn_keys(), "the turn pipeline, shared with eval and play"),
      section("sampling", &C::sampling, sampling_keys(), "how training's replies are sampled",
              SectionRules<C, Sampling>{.check = check_sampling}),
      section("ppo", &C::ppo, ppo_keys(), "the update"),
      section("reward", &C::reward, reward_keys(), "the reward stage between the rollout and the estimator",
              SectionRules<C, Reward>{.check = check_reward}),
      section("run", &C::run, run_keys(), "length, seeds, evaluations and the run folder", SectionRules<C, Run>{.check = check_run}),
  };
  return schema;
}

/** The checks that join keys of two sections. */
void check_across_sections(ConfigSection& root, const TrainConfig& c) {
  for (const std::string& task : c.format.tasks) {
    if (!contains(c.env.ids, task)) root.section("format").fail("tasks", "names '" + task + "', which is not one of env.id");
  }
  const bool groups = uses_groups(c.ppo.estimator);
  if (groups && c.env.group_size < 2) {
    root.section("ppo").fail("estimator", "'" + enum_name(c.ppo.estimator) + "' compares episodes of one start state: set env.group_size >= 2");
  }
  const int64_t batch_turns = static_cast<int64_t>(c.env.n_env) * c.env.e_len;
  if (c.ppo.minibatch > batch_turns) {
    root.section("ppo").fail("minibatch", "must be at most the batch of env.n_env x env.e_len = " + std::to_string(batch_turns) +
                                              " turns, got " + std::to_string(c.ppo.minibatch));
  }
  if (c.reward.dynamic_sampling_tries > 0 && !groups) {
    root.section("reward").fail("dynamic_sampling_tries",
                                "drops groups without signal: set ppo.estimator to a group estimator (grpo, token_grpo, rloo, gigpo)");
  }
  if (c.reward.process && (c.ppo.estimator == Estimator::kGrpo || c.ppo.estimator == Estimator::kGigpo)) {
    root.section("reward").fail("manager", "process rewards need an estimator that keeps token rewards (gae, reinforce++, token_grpo, rloo), not " +
                                               enum_name(c.ppo.estimator) + ", which sums each turn's rewards");
  }
}

}  // namespace

TrainConfig TrainConfig::load(const std::string& path, const std::vector<std::string>& overrides) {
  YAML::Node node = load_yaml_file(path);
  apply_overrides(node, overrides);
  ConfigSection root(path, node, "");
  TrainConfig c;
  read_keys(root, train_schema(), c);
  root.finish();
  check_across_sections(root, c);
  return c;
}

std::string TrainConfig::to_yaml() const {
  YAML::Emitter out;
  write_keys(out, train_schema(), *this);
  return out.c_str();
}

FineTuning TrainConfig::fine_tuning(const std::vector<std::string>& overrides) {
  YAML::Node node(YAML::NodeType::Map);
  apply_overrides(node, overrides);
  ConfigSection root("--set", node, "");
  ConfigSection section = root.section("format");
  FineTuning tuning;
  read_keys(section, fine_tuning_keys(), tuning);
  section.finish();
  root.finish();
  return tuning;
}

std::vector<KeyInfo> TrainConfig::reference() { return describe_keys(train_schema()); }

}  // namespace turnrl::trainer
