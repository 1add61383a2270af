#include "tools/eval_config.h"

#include <algorithm>
#include <set>
#include <stdexcept>

#include "envs/registry.h"
#include "trainer/config/config_reader.h"

namespace turnrl::tools {
namespace {

using trainer::ConfigSection;

constexpr int kBalrogMaxTokens = 8192;  // BALROG's client default (balrog.md 1.2)
constexpr int kLocalMaxTokens = 64;

EvalModel read_model(ConfigSection section) {
  EvalModel model;
  section.read("name", model.name);
  section.read("type", model.type, trainer::one_of({"random", "expert", "human", "http", "llm"}), "must be random, expert, human, http or llm");
  section.read("sight", model.sight, trainer::one_of({"full", "view"}), "must be full or view");
  section.read("base_url", model.base_url);
  section.read("model", model.model);
  section.read("api_key_env", model.api_key_env);
  section.read("timeout_s", model.timeout_s, trainer::positive<double>(), "must be > 0");
  section.read("retries", model.retries, trainer::non_negative<int>(), "must be >= 0");
  section.read("concurrency", model.concurrency, trainer::positive<int>(), "must be >= 1");
  section.read("path", model.path);
  section.read("device", model.device);
  section.read("temperature", model.temperature, trainer::non_negative<double>(), "must be >= 0");
  section.read("max_new_tokens", model.max_new_tokens, trainer::positive<int>(), "must be > 0");
  section.finish();
  if (model.name.empty()) section.fail("name", "is required");
  if (model.type.empty()) section.fail("type", "is required (random, expert, human, http or llm)");
  if (model.type == "http" && (model.base_url.empty() || model.model.empty())) section.fail("base_url", "and model are required for type http");
  if (model.sight != "full" && model.type != "expert") section.fail("sight", "applies to type expert only");
  if (model.type == "llm" && model.path.empty()) section.fail("path", "is required for type llm");
  if (model.max_new_tokens == 0) model.max_new_tokens = model.type == "http" ? kBalrogMaxTokens : kLocalMaxTokens;
  return model;
}

}  // namespace

EvalConfig load_eval_config(const std::string& path) {
  ConfigSection root(path, trainer::load_yaml_file(path), "");
  EvalConfig config;
  config.file = path;
  root.read("output_dir", config.output_dir);
  root.read_string_list("tasks", config.tasks);
  root.read("episodes_per_task", config.episodes_per_task, trainer::positive<int>(), "must be > 0");
  root.read("seed", config.seed);
  root.read("parallel_episodes", config.runner.parallel_episodes, trainer::positive<int>(), "must be > 0");
  root.read("batch_size", config.runner.batch_size);
  config.runner.turn = trainer::read_turn_settings(root.section("turn"));
  nlohmann::json options = nlohmann::json::object();
  root.read_json("env_options", options);
  for (const auto& [family, value] : options.items()) {
    if (!value.is_object()) root.fail("env_options", "'" + family + "' must map to a mapping of options");
    config.env_options[family] = value;
  }
  std::set<std::string> names;
  for (ConfigSection& model : root.section_list("models")) {
    config.models.push_back(read_model(model));
    if (!names.insert(config.models.back().name).second) model.fail("name", "is a duplicate ('" + config.models.back().name + "')");
  }
  root.finish();
  if (config.models.empty()) root.fail("models", "must be a non-empty list");
  if (config.tasks.empty()) root.fail("tasks", "must list at least one env id");
  const std::vector<std::string> known = envs::env_ids();
  for (const auto& task : config.tasks) {
    if (std::find(known.begin(), known.end(), task) == known.end()) root.fail("tasks", "has an unknown env id '" + task + "'");
  }
  for (const auto& [family, value] : config.env_options) {
    bool used = false;
    for (const auto& task : config.tasks) used |= task.substr(0, task.find('/')) == family;
    if (!used) root.fail("env_options", "'" + family + "' names a family with no task in the sweep");
  }
  return config;
}

}  // namespace turnrl::tools
