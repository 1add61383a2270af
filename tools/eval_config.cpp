#include "tools/eval_config.h"

#include <algorithm>
#include <set>
#include <stdexcept>

#include "envs/registry.h"

namespace turnrl::tools {
namespace {

using trainer::Check;
using trainer::ConfigSection;
using trainer::Key;
using trainer::KeyInfo;
using trainer::Schema;
using trainer::key;
using trainer::key_at;

constexpr int kBalrogMaxTokens = 8192;  // BALROG's client default (balrog.md 1.2)
constexpr int kLocalMaxTokens = 64;

Schema<EvalModel> model_keys() {
  using M = EvalModel;
  return {
      key("name", &M::name, "the model's name in outputs (required, unique)"),
      key("type", &M::type, "the agent (required): random, the env's scripted expert, a person, an OpenAI-compatible server, a model folder"),
      key("expert_sight", &M::expert_sight, "expert: what it reads, the whole state or only what the prompt shows"),
      key("base_url", &M::base_url, "http: the server's base URL (required)"),
      key("model", &M::model, "http: the served model's name (required)"),
      key("api_key_env", &M::api_key_env, "http: the environment variable holding the API key"),
      key("timeout", &M::timeout_s, "http: seconds a request may take", trainer::positive<double>("seconds")),
      key("retries", &M::retries, "http: retries of a failed request", trainer::non_negative<int>()),
      key("backoff", &M::backoff_s, "http: seconds before the first retry, doubled for each next one (a 429's Retry-After replaces it)",
          trainer::non_negative<double>()),
      key("concurrency", &M::concurrency, "http: requests in flight at once", trainer::positive<int>()),
      key("requests_per_minute", &M::requests_per_minute,
          "http: client-side budget; attempts (retries too) are spaced 60/requests_per_minute s apart (0: none)", trainer::non_negative<int>()),
      key("tokens_per_minute", &M::tokens_per_minute,
          "http: client-side budget of prompt + completion tokens (the server's usage); each request holds the next back by its "
          "tokens' share of a minute (0: none)",
          trainer::non_negative<int>()),
      key("path", &M::path, "llm: the model folder (required)"),
      key("device", &M::device, "llm: cpu or cuda"),
      key("prefix_cache_mb", &M::prefix_cache_mb,
          "llm: memory for the keys and values of prompt prefixes seen before, reused by later prompts that begin with them (0: none)",
          trainer::non_negative<int>()),
      key("temperature", &M::temperature, "http and llm: sampling temperature (0: greedy)", trainer::non_negative<double>()),
      key("max_response_tokens", &M::max_new_tokens, "http and llm: reply length limit (unset: BALROG's 8192 for http, 64 for llm)",
          trainer::positive<int>()),
      key("usd_per_million_prompt_tokens", &M::price_prompt,
          "http and llm: the price of prompt tokens, for the summary's cost (0 and completion 0: no cost)", trainer::non_negative<double>()),
      key("usd_per_million_completion_tokens", &M::price_completion, "http and llm: the price of completion tokens, for the summary's cost",
          trainer::non_negative<double>()),
  };
}

void check_model(ConfigSection& section, EvalModel& model) {
  using Type = EvalModel::Type;
  if (model.name.empty()) section.fail("name", "is required");
  if (!section.has_value("type")) section.fail("type", "is required (random, expert, human, http or llm)");
  if (model.type == Type::kHttp && (model.base_url.empty() || model.model.empty())) section.fail("base_url", "and model are required for type http");
  if (model.expert_sight != envs::ExpertSight::kFull && model.type != Type::kExpert) section.fail("expert_sight", "applies to type expert only");
  if (model.type == Type::kLlm && model.path.empty()) section.fail("path", "is required for type llm");
  if (section.has_value("prefix_cache_mb") && model.type != Type::kLlm) section.fail("prefix_cache_mb", "applies to type llm only");
  for (const char* budget : {"requests_per_minute", "tokens_per_minute"}) {
    if (section.has_value(budget) && model.type != Type::kHttp) section.fail(budget, "applies to type http only");
  }
  const bool counts_tokens = model.type == Type::kHttp || model.type == Type::kLlm;
  for (const char* price : {"usd_per_million_prompt_tokens", "usd_per_million_completion_tokens"}) {
    if (section.has_value(price) && !counts_tokens) section.fail(price, "applies to types http and llm only (the others use no tokens)");
  }
  if (model.max_new_tokens == 0) model.max_new_tokens = model.type == Type::kHttp ? kBalrogMaxTokens : kLocalMaxTokens;
}

/** `env_options`: family -> a mapping of options. */
Key<EvalConfig> env_options_key() {
  return {"env_options",
          [](ConfigSection& section, EvalConfig& config) {
            nlohmann::json options = nlohmann::json::object();
            section.read_json("env_options", options);
            for (const auto& [family, value] : options.items()) {
              if (!value.is_object()) section.fail("env_options", "'" + family + "' must map to a mapping of options");
              config.env_options[family] = value;
            }
          },
          [](YAML::Emitter& out, const EvalConfig& config) {
            out << YAML::Key << "env_options" << YAML::Value << YAML::BeginMap;
            for (const auto& [family, options] : config.env_options) {
              out << YAML::Key << family << YAML::Value << YAML::Flow << YAML::Load(options.dump());
            }
            out << YAML::EndMap;
          },
          [](std::vector<KeyInfo>& rows, const std::string& prefix, const EvalConfig&) {
            rows.push_back({prefix + "env_options", "mapping", "", "env options per family (the id's part before '/'), e.g. {babyai: {num_dists: 8}}"});
          }};
}

const Schema<EvalConfig>& eval_schema() {
  using C = EvalConfig;
  static const Schema<C> schema = {
      key("output_dir", &C::output_dir, "the sweep's folder: per-episode JSON Lines (a rerun plays the episodes without a finished record), summaries, plot, "
          "balrog/ (BALROG's layout)"),
      trainer::section("env", &C::env, Schema<C::Env>{key("id", &C::Env::ids, "the tasks (env ids) of the sweep (required)")},
                       "the environments"),
      key("episodes_per_task", &C::episodes_per_task, "episodes of each task per model", trainer::positive<int>()),
      key("seed", &C::seed, "episode e of every task uses seed + e (repeat r of it: seed + r * episodes_per_task + e)"),
      key("repeats", &C::repeats,
          "seeds per episode slot (`turnrl eval --repeats`); the summary adds the spread of the repeats' means", trainer::positive<int>()),
      key_at<C>("parallel_episodes", [](C& c) -> auto& { return c.runner.parallel_episodes; }, "episodes running at once",
                trainer::positive<int>()),
      key_at<C>("lock_step", [](C& c) -> auto& { return c.runner.lock_step; },
                "every turn waits for every running episode's reply (BALROG's and Verlog's batched loop), for comparison"),
      key_at<C>("batch_size", [](C& c) -> auto& { return c.runner.batch_size; },
                "prompts per act() call of llm, random and human agents; 0: all waiting"),
      trainer::section_at<C>("turn", [](C& c) -> auto& { return c.runner.turn; }, trainer::turn_keys(),
                             "the turn pipeline, as in training configs"),
      env_options_key(),
      trainer::section_list("models", &C::models, model_keys(), "the agents evaluated", std::function<void(ConfigSection&, EvalModel&)>(check_model)),
  };
  return schema;
}

void check_sweep(ConfigSection& root, const EvalConfig& config) {
  std::set<std::string> names;
  for (size_t i = 0; i < config.models.size(); ++i) {
    if (!names.insert(config.models[i].name).second) root.section_list("models")[i].fail("name", "is a duplicate ('" + config.models[i].name + "')");
  }
  if (config.models.empty()) root.fail("models", "must be a non-empty list");
  ConfigSection env = root.section("env");
  if (config.env.ids.empty()) env.fail("id", "must list at least one env id");
  const std::vector<std::string> known = envs::env_ids();
  for (const auto& task : config.env.ids) {
    if (std::find(known.begin(), known.end(), task) == known.end()) env.fail("id", "has an unknown env id '" + task + "'");
  }
  for (const auto& [family, value] : config.env_options) {
    bool used = false;
    for (const auto& task : config.env.ids) used |= task.substr(0, task.find('/')) == family;
    if (!used) root.fail("env_options", "'" + family + "' names a family with no task in the sweep");
  }
}

}  // namespace

const trainer::KeyRenames& eval_config_renames() {
  static const trainer::KeyRenames renames = {{"tasks", "env.id"},
                                              {"models[].sight", "models[].expert_sight"},
                                              {"models[].timeout_s", "models[].timeout"},
                                              {"models[].max_new_tokens", "models[].max_response_tokens"}};
  return renames;
}

EvalConfig load_eval_config(const std::string& path, const std::vector<std::string>& overrides) {
  YAML::Node node = trainer::load_yaml_file(path);
  trainer::apply_overrides(node, overrides);
  ConfigSection root(path, node, "", &eval_config_renames());
  EvalConfig config;
  config.file = path;
  read_keys(root, eval_schema(), config);
  root.finish();
  check_sweep(root, config);
  return config;
}

std::string eval_config_yaml(const EvalConfig& config) {
  YAML::Emitter out;
  trainer::write_keys(out, eval_schema(), config);
  return out.c_str();
}

std::vector<KeyInfo> eval_config_reference() { return trainer::describe_keys(eval_schema()); }

}  // namespace turnrl::tools
