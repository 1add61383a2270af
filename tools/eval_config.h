#pragma once
// `turnrl eval` sweep configuration (YAML), read through the one config reader: every key is
// validated (`file:line: key: problem`); the `turn:` section is the same as in training configs.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "trainer/rollout/episode_runner.h"

namespace turnrl::tools {

struct EvalModel {
  std::string name;
  std::string type;  // random | expert | human | http | llm
  std::string sight = "full";  // expert: full or view (envs/expert.h)
  // http
  std::string base_url, model, api_key_env;
  double timeout_s = 60.0;
  int retries = 3;
  int concurrency = 8;  // http: requests in flight at once
  // llm
  std::string path, device = "cpu";
  // sampling (http and llm)
  double temperature = 1.0;
  /** Reply length limit; BALROG's 8192 for http unless set, 64 for local models. */
  int max_new_tokens = 0;
};

struct EvalConfig {
  std::string file;
  std::string output_dir = "eval-out";
  std::vector<std::string> tasks;  // env ids, e.g. babyai/goto
  int episodes_per_task = 1;
  uint64_t seed = 0;
  std::map<std::string, nlohmann::json> env_options;  // per family (the id's part before '/')
  std::vector<EvalModel> models;
  trainer::EpisodeRunnerConfig runner;
};

/** Loads and validates `path`; throws std::invalid_argument naming the file and the key. */
EvalConfig load_eval_config(const std::string& path);

}  // namespace turnrl::tools
