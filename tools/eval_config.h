#pragma once
// `turnrl eval` sweep configuration (YAML): every key declared once (eval_config.cpp), read through
// the one config reader (`file:line: key: problem`); the `turn:` section is the same as in training
// configs, and keys that name what a training config names take its name (`env.id`,
// `max_response_tokens`, `timeout`, `expert_sight`): the old names are refused naming the new.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "envs/expert.h"
#include "trainer/config/config_schema.h"
#include "trainer/rollout/episode_runner.h"

namespace turnrl::tools {

struct EvalModel {
  enum class Type { kRandom, kExpert, kHuman, kHttp, kLlm };
  std::string name;
  Type type = Type::kRandom;  // required in a file
  envs::ExpertSight expert_sight = envs::ExpertSight::kFull;  // expert only (envs/expert.h)
  // http
  std::string base_url, model, api_key_env;
  double timeout_s = 60.0;
  int retries = 3;
  double backoff_s = 0.5;  // before retry k: backoff_s * 2^k, unless the server's Retry-After says otherwise
  int concurrency = 8;  // http: requests in flight at once
  int requests_per_minute = 0, tokens_per_minute = 0;  // http: the client-side budget (agents/request_budget.h); 0: none
  // llm
  std::string path, device = "cpu";
  int prefix_cache_mb = 1024;  // llm: the engine's prefix cache (agents/model/prefix_cache.h); 0: none
  // sampling (http and llm)
  double temperature = 1.0;
  /** Reply length limit; BALROG's 8192 for http unless set, 64 for local models. */
  int max_new_tokens = 0;
  // cost (http and llm): USD per million tokens; 0 and 0: no cost in the summary
  double price_prompt = 0.0, price_completion = 0.0;
};

struct EvalConfig {
  std::string file;
  std::string output_dir = "eval-out";
  struct Env {
    std::vector<std::string> ids;  // e.g. babyai/goto
  } env;
  int episodes_per_task = 1;
  int repeats = 1;  // seeds per episode slot: repeat r of episode e plays seed + r * episodes_per_task + e
  uint64_t seed = 0;
  std::map<std::string, nlohmann::json> env_options;  // per family (the id's part before '/')
  std::vector<EvalModel> models;
  trainer::EpisodeRunnerConfig runner;
};

/** Loads and validates `path` with `overrides` (`key=value`, as `turnrl train --set`); throws
 *  std::invalid_argument naming the file and the key. */
EvalConfig load_eval_config(const std::string& path, const std::vector<std::string>& overrides = {});
/** The resolved sweep as YAML text (max_response_tokens resolved), as load_eval_config reads it. */
std::string eval_config_yaml(const EvalConfig& config);
/** Every key with its type, default and doc (`turnrl config --reference`). */
std::vector<trainer::KeyInfo> eval_config_reference();
/** The keys eval configs once named otherwise: old path -> new path. */
const trainer::KeyRenames& eval_config_renames();

}  // namespace turnrl::tools

namespace turnrl::trainer {
template <>
struct EnumNames<tools::EvalModel::Type> {
  static const std::vector<std::string>& names() {
    static const std::vector<std::string> n = {"random", "expert", "human", "http", "llm"};
    return n;
  }
};
}  // namespace turnrl::trainer
