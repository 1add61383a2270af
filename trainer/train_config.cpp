#include "trainer/train_config.h"

#include <functional>
#include <algorithm>
#include <map>
#include <set>
#include <sstream>
#include <stdexcept>

#include <yaml-cpp/yaml.h>

#include "envs/registry.h"
#include "trainer/advantages.h"

namespace turnrl::trainer {
namespace {

/** Reads one section, refusing keys it does not know. */
class SectionReader {
 public:
  SectionReader(const std::string& file, const YAML::Node& root, const std::string& section)
      : file_(file), section_(section), node_(root[section]) {
    if (node_ && !node_.IsMap()) fail(node_, "section '" + section + "' must be a mapping");
  }

  template <typename T>
  void read(const std::string& key, T& out, std::function<bool(const T&)> valid = nullptr, const char* rule = "") {
    known_.insert(key);
    if (!node_ || !node_[key]) return;
    const YAML::Node value = node_[key];
    try {
      out = value.as<T>();
    } catch (const YAML::Exception&) {
      fail(value, "key '" + section_ + "." + key + "' has the wrong type");
    }
    if (valid && !valid(out)) fail(value, "key '" + section_ + "." + key + "' " + rule);
  }

  void read_json(const std::string& key, nlohmann::json& out) {
    known_.insert(key);
    if (!node_ || !node_[key]) return;
    if (!node_[key].IsMap()) fail(node_[key], "key '" + section_ + "." + key + "' must be a mapping");
    out = nlohmann::json::object();
    for (const auto& item : node_[key]) {
      const std::string name = item.first.as<std::string>();
      const std::string text = item.second.as<std::string>();
      const auto parsed = nlohmann::json::parse(text, nullptr, false);
      out[name] = parsed.is_discarded() ? nlohmann::json(text) : parsed;
    }
  }

  /** A string or a non-empty list of strings. */
  void read_string_list(const std::string& key, std::vector<std::string>& out) {
    known_.insert(key);
    if (!node_ || !node_[key]) return;
    const YAML::Node value = node_[key];
    try {
      if (value.IsSequence()) {
        out = value.as<std::vector<std::string>>();
        if (out.empty()) fail(value, "key '" + section_ + "." + key + "' must not be an empty list");
      } else {
        out = {value.as<std::string>()};
      }
    } catch (const YAML::Exception&) {
      fail(value, "key '" + section_ + "." + key + "' must be a string or a list of strings");
    }
  }

  /** Fails at `key`'s line. */
  [[noreturn]] void fail_at(const std::string& key, const std::string& message) const {
    fail(node_ && node_[key] ? node_[key] : node_, "key '" + section_ + "." + key + "' " + message);
  }

  void reject_unknown() const {
    if (!node_) return;
    for (const auto& item : node_) {
      const std::string key = item.first.as<std::string>();
      if (!known_.count(key)) fail(item.first, "unknown key '" + section_ + "." + key + "'");
    }
  }

 private:
  [[noreturn]] void fail(const YAML::Node& node, const std::string& message) const {
    throw std::invalid_argument(file_ + ":" + std::to_string(node.Mark().line + 1) + ": " + message);
  }

  std::string file_, section_;
  YAML::Node node_;
  std::set<std::string> known_;
};

template <typename T>
std::function<bool(const T&)> positive() {
  return [](const T& v) { return v > 0; };
}
template <typename T>
std::function<bool(const T&)> non_negative() {
  return [](const T& v) { return v >= 0; };
}
std::function<bool(const double&)> unit_interval() {
  return [](const double& v) { return v >= 0 && v <= 1; };
}
std::function<bool(const std::string&)> one_of(std::initializer_list<const char*> names) {
  std::vector<std::string> allowed(names.begin(), names.end());
  return [allowed](const std::string& v) { return std::find(allowed.begin(), allowed.end(), v) != allowed.end(); };
}

}  // namespace

TrainConfig TrainConfig::load(const std::string& path) {
  YAML::Node root;
  try {
    root = YAML::LoadFile(path);
  } catch (const YAML::BadFile&) {
    throw std::invalid_argument(path + ": cannot open");
  } catch (const YAML::Exception& e) {
    throw std::invalid_argument(path + ":" + std::to_string(e.mark.line + 1) + ": invalid YAML: " + e.msg);
  }
  if (!root.IsMap()) throw std::invalid_argument(path + ": the top level must be a mapping");
  static const std::set<std::string> kSections = {"model", "env", "sampling", "ppo", "run"};
  for (const auto& item : root) {
    const std::string name = item.first.as<std::string>();
    if (!kSections.count(name)) {
      throw std::invalid_argument(path + ":" + std::to_string(item.first.Mark().line + 1) + ": unknown section '" + name +
                                  "' (model, env, sampling, ppo, run)");
    }
  }
  TrainConfig c;
  SectionReader model(path, root, "model");
  model.read("path", c.model.path);
  model.read("preset", c.model.preset, one_of({"", "tiny", "qwen2.5-0.5b"}), "must be tiny or qwen2.5-0.5b");
  model.read("device", c.model.device);
  model.read("threads", c.model.threads, positive<int>(), "must be positive");
  model.reject_unknown();
  if (c.model.path.empty()) throw std::invalid_argument(path + ": key 'model.path' is required");

  SectionReader env(path, root, "env");
  env.read_string_list("id", c.env.ids);
  const std::vector<std::string> known_ids = envs::env_ids();
  for (const std::string& id : c.env.ids) {
    if (std::find(known_ids.begin(), known_ids.end(), id) == known_ids.end()) {
      env.fail_at("id", "names an unknown environment '" + id + "' (see `turnrl envs`)");
    }
  }
  env.read_json("options", c.env.options);
  env.read("n_env", c.env.n_env, positive<int>(), "must be positive");
  env.read("e_len", c.env.e_len, positive<int>(), "must be positive");
  env.read("group_size", c.env.group_size, positive<int>(), "must be positive");
  env.read("history", c.env.history, non_negative<int>(), "must be >= 0");
  env.read("prompt_format", c.env.prompt_format, one_of({"balrog", "verlog", "compact"}), "must be balrog, verlog or compact");
  env.read("reply_format", c.env.reply_format, one_of({"action-tag", "balrog"}), "must be action-tag or balrog");
  env.read("invalid_penalty", c.env.invalid_penalty);
  env.read("history_entry", c.env.history_entry, one_of({"raw", "executed"}), "must be raw or executed");
  env.read("binary_reward", c.env.binary_reward);
  env.read("prompt_budget", c.env.prompt_budget, positive<int>(), "must be positive");
  env.reject_unknown();
  if (c.env.n_env < static_cast<int>(c.env.ids.size()) * c.env.group_size) {
    env.fail_at("n_env", "must be at least the number of tasks in env.id (" + std::to_string(c.env.ids.size()) +
                             ") times env.group_size (" + std::to_string(c.env.group_size) + ")");
  }
  if (c.env.n_env % c.env.group_size != 0) {
    env.fail_at("group_size", "must divide env.n_env (" + std::to_string(c.env.n_env) + ")");
  }

  SectionReader sampling(path, root, "sampling");
  sampling.read("temperature", c.sampling.temperature, non_negative<double>(), "must be >= 0");
  sampling.read("top_p", c.sampling.top_p, unit_interval(), "must be in [0, 1]");
  sampling.read("max_response_tokens", c.sampling.max_response_tokens, positive<int>(), "must be positive");
  sampling.read("action_tokens_only", c.sampling.action_tokens_only);
  sampling.reject_unknown();

  SectionReader ppo(path, root, "ppo");
  ppo.read("actor_lr", c.ppo.actor_lr, positive<double>(), "must be positive");
  ppo.read("critic_lr", c.ppo.critic_lr, positive<double>(), "must be positive");
  ppo.read("weight_decay", c.ppo.weight_decay, non_negative<double>(), "must be >= 0");
  ppo.read("clip", c.ppo.clip, positive<double>(), "must be positive");
  ppo.read("dual_clip", c.ppo.dual_clip);
  ppo.read("value_clip", c.ppo.value_clip, positive<double>(), "must be positive");
  ppo.read("epochs", c.ppo.epochs, positive<int>(), "must be positive");
  ppo.read("minibatch", c.ppo.minibatch, positive<int>(), "must be positive");
  ppo.read("grad_clip", c.ppo.grad_clip, positive<double>(), "must be positive");
  ppo.read("kl_coef", c.ppo.kl_coef, non_negative<double>(), "must be >= 0");
  ppo.read("entropy_coef", c.ppo.entropy_coef, non_negative<double>(), "must be >= 0");
  ppo.read("step_gamma", c.ppo.step_gamma, unit_interval(), "must be in [0, 1]");
  ppo.read("step_lambda", c.ppo.step_lambda, unit_interval(), "must be in [0, 1]");
  ppo.read("token_gamma", c.ppo.token_gamma, unit_interval(), "must be in [0, 1]");
  ppo.read("token_lambda", c.ppo.token_lambda, unit_interval(), "must be in [0, 1]");
  ppo.read("estimator", c.ppo.estimator, one_of({"gae", "reinforce++", "grpo", "token_grpo", "rloo"}),
           "must be gae, reinforce++, grpo, token_grpo or rloo");
  if (uses_groups(parse_estimator(c.ppo.estimator)) && c.env.group_size < 2) {
    ppo.fail_at("estimator", "'" + c.ppo.estimator + "' compares episodes of one start state: set env.group_size >= 2");
  }
  ppo.read("first_token_weight", c.ppo.first_token_weight, positive<double>(), "must be positive");
  ppo.read("critic_warmup_iterations", c.ppo.critic_warmup_iterations, non_negative<int>(), "must be >= 0");
  ppo.read("critic_warmup_multiplier", c.ppo.critic_warmup_multiplier, positive<int>(), "must be positive");
  ppo.reject_unknown();

  SectionReader run(path, root, "run");
  run.read("iterations", c.run.iterations, positive<int>(), "must be positive");
  run.read("minutes", c.run.minutes, non_negative<double>(), "must be >= 0");
  run.read("seed", c.run.seed);
  run.read("out", c.run.out);
  run.read("checkpoint_every", c.run.checkpoint_every, positive<int>(), "must be positive");
  run.read("eval_every", c.run.eval_every, positive<int>(), "must be positive");
  run.read("eval_episodes", c.run.eval_episodes, non_negative<int>(), "must be >= 0");
  run.read("eval_seed", c.run.eval_seed);
  run.read("train_seed", c.run.train_seed);
  run.reject_unknown();
  return c;
}

std::string TrainConfig::to_yaml() const {
  YAML::Emitter out;
  out << YAML::BeginMap;
  out << YAML::Key << "model" << YAML::Value << YAML::BeginMap << YAML::Key << "path" << YAML::Value << model.path
      << YAML::Key << "preset" << YAML::Value << model.preset << YAML::Key << "device" << YAML::Value << model.device
      << YAML::Key << "threads" << YAML::Value << model.threads << YAML::EndMap;
  out << YAML::Key << "env" << YAML::Value << YAML::BeginMap << YAML::Key << "id" << YAML::Value << YAML::Flow << env.ids << YAML::Key
      << "options" << YAML::Value << YAML::BeginMap;
  for (const auto& [key, value] : env.options.items()) out << YAML::Key << key << YAML::Value << value.dump();
  out << YAML::EndMap << YAML::Key << "n_env" << YAML::Value << env.n_env << YAML::Key << "e_len" << YAML::Value << env.e_len
      << YAML::Key << "group_size" << YAML::Value << env.group_size
      << YAML::Key << "history" << YAML::Value << env.history << YAML::Key << "prompt_format" << YAML::Value
      << env.prompt_format << YAML::Key << "reply_format" << YAML::Value << env.reply_format << YAML::Key
      << "invalid_penalty" << YAML::Value << env.invalid_penalty << YAML::Key << "history_entry" << YAML::Value
      << env.history_entry << YAML::Key << "binary_reward" << YAML::Value << env.binary_reward << YAML::Key << "prompt_budget" << YAML::Value
      << env.prompt_budget << YAML::EndMap;
  out << YAML::Key << "sampling" << YAML::Value << YAML::BeginMap << YAML::Key << "temperature" << YAML::Value
      << sampling.temperature << YAML::Key << "top_p" << YAML::Value << sampling.top_p << YAML::Key
      << "max_response_tokens" << YAML::Value << sampling.max_response_tokens << YAML::Key << "action_tokens_only"
      << YAML::Value << sampling.action_tokens_only << YAML::EndMap;
  out << YAML::Key << "ppo" << YAML::Value << YAML::BeginMap;
  const std::pair<const char*, double> doubles[] = {
      {"actor_lr", ppo.actor_lr},         {"critic_lr", ppo.critic_lr},     {"weight_decay", ppo.weight_decay},
      {"clip", ppo.clip},                 {"dual_clip", ppo.dual_clip},     {"value_clip", ppo.value_clip},
      {"grad_clip", ppo.grad_clip},       {"kl_coef", ppo.kl_coef},         {"entropy_coef", ppo.entropy_coef},
      {"step_gamma", ppo.step_gamma},     {"step_lambda", ppo.step_lambda}, {"token_gamma", ppo.token_gamma},
      {"token_lambda", ppo.token_lambda}, {"first_token_weight", ppo.first_token_weight}};
  for (const auto& [key, value] : doubles) out << YAML::Key << key << YAML::Value << value;
  out << YAML::Key << "epochs" << YAML::Value << ppo.epochs << YAML::Key << "minibatch" << YAML::Value << ppo.minibatch
      << YAML::Key << "estimator" << YAML::Value << ppo.estimator << YAML::Key << "critic_warmup_iterations" << YAML::Value
      << ppo.critic_warmup_iterations << YAML::Key << "critic_warmup_multiplier" << YAML::Value
      << ppo.critic_warmup_multiplier << YAML::EndMap;
  out << YAML::Key << "run" << YAML::Value << YAML::BeginMap << YAML::Key << "iterations" << YAML::Value << run.iterations
      << YAML::Key << "minutes" << YAML::Value << run.minutes << YAML::Key << "seed" << YAML::Value << run.seed << YAML::Key
      << "out" << YAML::Value << run.out << YAML::Key << "checkpoint_every" << YAML::Value << run.checkpoint_every
      << YAML::Key << "eval_every" << YAML::Value << run.eval_every << YAML::Key << "eval_episodes" << YAML::Value
      << run.eval_episodes << YAML::Key << "eval_seed" << YAML::Value << run.eval_seed << YAML::Key << "train_seed"
      << YAML::Value << run.train_seed << YAML::EndMap;
  out << YAML::EndMap;
  return out.c_str();
}

}  // namespace turnrl::trainer
