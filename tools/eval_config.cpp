#include "tools/eval_config.h"

#include <set>
#include <stdexcept>

#include <yaml-cpp/yaml.h>

#include "envs/registry.h"

namespace turnrl::tools {
namespace {

class Reader {
 public:
  Reader(const YAML::Node& node, std::string file, std::string where) : node_(node), file_(std::move(file)), where_(std::move(where)) {
    if (!node_.IsMap()) fail(where_, "must be a mapping");
  }
  [[noreturn]] void fail(const std::string& key, const std::string& problem) const {
    throw std::invalid_argument(file_ + ": " + key + " " + problem);
  }
  std::string path(const std::string& key) const { return where_.empty() ? key : where_ + "." + key; }
  template <typename T>
  void get(const std::string& key, T& out) {
    seen_.insert(key);
    const YAML::Node value = node_[key];
    if (!value || value.IsNull()) return;
    try {
      out = value.as<T>();
    } catch (const YAML::Exception&) {
      fail(path(key), "has the wrong type (line " + std::to_string(value.Mark().line + 1) + ")");
    }
  }
  YAML::Node child(const std::string& key) {
    seen_.insert(key);
    return node_[key];
  }
  void finish() const {
    for (const auto& entry : node_) {
      const std::string key = entry.first.as<std::string>();
      if (!seen_.count(key)) fail(path(key), "is not a known key");
    }
  }
  const std::string& file() const { return file_; }

 private:
  YAML::Node node_;
  std::string file_, where_;
  std::set<std::string> seen_;
};

nlohmann::json to_json(const YAML::Node& node) {
  if (node.IsMap()) {
    nlohmann::json out = nlohmann::json::object();
    for (const auto& entry : node) out[entry.first.as<std::string>()] = to_json(entry.second);
    return out;
  }
  if (node.IsSequence()) {
    nlohmann::json out = nlohmann::json::array();
    for (const auto& item : node) out.push_back(to_json(item));
    return out;
  }
  if (node.IsNull()) return nullptr;
  const std::string text = node.Scalar();
  const auto parsed = nlohmann::json::parse(text, nullptr, false);
  return parsed.is_discarded() ? nlohmann::json(text) : parsed;
}

void read_prompt(Reader& reader, EvalConfig& config) {
  std::string layout = "balrog", reply_format = "balrog", history_entry = "raw";
  int max_history = 16;
  size_t token_budget = 0;
  bool feedback = true;
  double penalty = 0.0;
  std::string suffix = "balrog-naive";
  reader.get("layout", layout);
  reader.get("reply_format", reply_format);
  reader.get("history_entry", history_entry);
  reader.get("max_history", max_history);
  reader.get("token_budget", token_budget);
  reader.get("feedback_on_invalid_action", feedback);
  reader.get("invalid_action_penalty", penalty);
  reader.get("suffix", suffix);
  reader.finish();
  auto& history = config.runner.history;
  if (layout == "balrog") history.layout = memory::PromptLayout::kBalrog;
  else if (layout == "verlog") history.layout = memory::PromptLayout::kVerlog;
  else reader.fail(reader.path("layout"), "must be balrog or verlog, got '" + layout + "'");
  if (max_history < 0) reader.fail(reader.path("max_history"), "must be >= 0");
  history.max_turns = max_history;
  history.token_budget = token_budget;
  if (suffix == "balrog-naive") history.suffix = memory::kBalrogNaiveSuffix;
  else if (suffix == "verlog-cot") history.suffix = memory::verlog_format_instruction();
  else if (suffix == "none") history.suffix.clear();
  else reader.fail(reader.path("suffix"), "must be balrog-naive, verlog-cot or none, got '" + suffix + "'");
  auto& actions = config.runner.actions;
  if (reply_format == "balrog") actions.reply_format = envs::ReplyFormat::kBalrogNaive;
  else if (reply_format == "action-tag") actions.reply_format = envs::ReplyFormat::kActionTag;
  else reader.fail(reader.path("reply_format"), "must be balrog or action-tag, got '" + reply_format + "'");
  config.runner.family_history_entry = history_entry == "family";
  if (history_entry == "raw") actions.history_entry = trainer::HistoryEntry::kRawReply;
  else if (history_entry == "action") actions.history_entry = trainer::HistoryEntry::kExecutedAction;
  else if (history_entry == "reply-with-action") actions.history_entry = trainer::HistoryEntry::kReplyWithExecuted;
  else if (history_entry != "family") {
    reader.fail(reader.path("history_entry"), "must be raw, action, reply-with-action or family, got '" + history_entry + "'");
  }
  actions.feedback_on_invalid_action = feedback;
  actions.invalid_action_penalty = penalty;
}

EvalModel read_model(Reader& reader) {
  EvalModel model;
  reader.get("name", model.name);
  reader.get("type", model.type);
  reader.get("base_url", model.base_url);
  reader.get("model", model.model);
  reader.get("api_key_env", model.api_key_env);
  reader.get("timeout_s", model.timeout_s);
  reader.get("retries", model.retries);
  reader.get("concurrency", model.concurrency);
  reader.get("path", model.path);
  reader.get("device", model.device);
  reader.get("temperature", model.temperature);
  reader.get("max_new_tokens", model.max_new_tokens);
  reader.finish();
  if (model.name.empty()) reader.fail(reader.path("name"), "is required");
  if (model.type == "http") {
    if (model.base_url.empty() || model.model.empty()) reader.fail(reader.path("base_url"), "and model are required for type http");
  } else if (model.type == "llm") {
    if (model.path.empty()) reader.fail(reader.path("path"), "is required for type llm");
  } else if (model.type != "random" && model.type != "human") {
    reader.fail(reader.path("type"), "must be random, human, http or llm, got '" + model.type + "'");
  }
  if (model.timeout_s <= 0) reader.fail(reader.path("timeout_s"), "must be > 0");
  if (model.retries < 0) reader.fail(reader.path("retries"), "must be >= 0");
  if (model.concurrency < 1) reader.fail(reader.path("concurrency"), "must be >= 1");
  if (model.max_new_tokens <= 0) reader.fail(reader.path("max_new_tokens"), "must be > 0");
  if (model.temperature < 0) reader.fail(reader.path("temperature"), "must be >= 0");
  return model;
}

}  // namespace

EvalConfig load_eval_config(const std::string& path) {
  YAML::Node root;
  try {
    root = YAML::LoadFile(path);
  } catch (const YAML::Exception& error) {
    throw std::invalid_argument(path + ": " + error.what());
  }
  EvalConfig config;
  config.file = path;
  Reader reader(root, path, "");
  reader.get("output_dir", config.output_dir);
  reader.get("tasks", config.tasks);
  reader.get("episodes_per_task", config.episodes_per_task);
  reader.get("seed", config.seed);
  reader.get("parallel_episodes", config.runner.parallel_episodes);
  reader.get("batch_size", config.runner.batch_size);
  reader.get("max_steps_per_episode", config.runner.actions.max_turns);
  if (const YAML::Node prompt = reader.child("prompt"); prompt) {
    Reader prompt_reader(prompt, path, "prompt");
    read_prompt(prompt_reader, config);
  } else {
    Reader defaults(YAML::Node(YAML::NodeType::Map), path, "prompt");
    read_prompt(defaults, config);
  }
  if (const YAML::Node options = reader.child("env_options"); options) {
    if (!options.IsMap()) reader.fail("env_options", "must be a mapping of family -> options");
    for (const auto& entry : options) config.env_options[entry.first.as<std::string>()] = to_json(entry.second);
  }
  const YAML::Node models = reader.child("models");
  if (!models || !models.IsSequence() || models.size() == 0) reader.fail("models", "must be a non-empty list");
  std::set<std::string> names;
  for (size_t i = 0; i < models.size(); ++i) {
    Reader model_reader(models[i], path, "models[" + std::to_string(i) + "]");
    config.models.push_back(read_model(model_reader));
    if (!names.insert(config.models.back().name).second) reader.fail("models[" + std::to_string(i) + "].name", "is a duplicate");
  }
  reader.finish();
  if (config.tasks.empty()) reader.fail("tasks", "must list at least one env id");
  const std::vector<std::string> known = envs::env_ids();
  for (const auto& task : config.tasks) {
    if (std::find(known.begin(), known.end(), task) == known.end()) reader.fail("tasks", "has an unknown env id '" + task + "'");
  }
  for (const auto& [family, options] : config.env_options) {
    bool used = false;
    for (const auto& task : config.tasks) used |= task.substr(0, task.find('/')) == family;
    if (!used) reader.fail("env_options." + family, "names a family with no task in the sweep");
  }
  if (config.episodes_per_task <= 0) reader.fail("episodes_per_task", "must be > 0");
  if (config.runner.parallel_episodes <= 0) reader.fail("parallel_episodes", "must be > 0");
  if (config.runner.actions.max_turns < 0) reader.fail("max_steps_per_episode", "must be >= 0 (0: the env's limit)");
  return config;
}

}  // namespace turnrl::tools
