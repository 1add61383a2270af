#pragma once
// Helpers for tests that run the trainer: config files and the metrics a run writes.
#include <fstream>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "temp_dir.h"

namespace turnrl::test {

/** This test process's folder of config files: no other process (another checkout's ctest) shares
 *  it, and it is removed when the process exits. */
inline const TempDir& config_dir() {
  static const TempDir dir("turnrl_configs");
  return dir;
}

/** Writes `text` to config_dir()/NAME and returns the path. */
inline std::string write_config(const std::string& name, const std::string& text) {
  const std::string path = config_dir() / name;
  std::ofstream(path) << text;
  return path;
}

/** A 3-cell corridor with free-form replies after a format stage of random keyed actions, PPO for
 *  `iterations` (one compute thread: on a busy 2-core machine two are several times slower). */
inline std::string corridor_config(const std::string& root, int iterations) {
  return "model:\n  path: " + root + "/base\n  preset: tiny\n  threads: 1\n"
         "format:\n  model: " + root + "/format\n  reply_template: 'ACTION: {action}'\n  episodes: 100\n"
         "  epochs: 4\n  lr: 3.0e-3\n  batch_size: 32\n"
         "env:\n  id: corridor/short\n  options: {length: 3}\n  n_env: 32\n  e_len: 8\n"
         "turn:\n  layout: compact\n  history: 0\n  reply_format: action-tag\n  history_entry: action\n"
         "  invalid_penalty: -0.1\n  binary_reward: true\n"
         "sampling:\n  max_response_tokens: 6\n  action_tokens_only: false\n"
         "ppo:\n  actor_lr: 3.0e-4\n  critic_lr: 2.0e-3\n  epochs: 4\n  minibatch: 64\n  kl_coef: 0.001\n  entropy_coef: 0.01\n"
         "  step_gamma: 0.9\n  token_gamma: 1.0\n  token_lambda: 1.0\n  critic_warmup_iterations: 1\n"
         "run:\n  iterations: " + std::to_string(iterations) + "\n  eval_every: 100\n  eval_episodes: 40\n  checkpoint_every: 100\n"
         "  out: " + root + "/run\n";
}

/** A JSON file, parsed (a run's checkpoint/state.json, a summary). */
inline nlohmann::json read_json(const std::string& path) {
  std::ifstream in(path);
  return nlohmann::json::parse(in);
}

/** Every line of a JSON Lines file, parsed (format data, sft_metrics.jsonl). */
inline std::vector<nlohmann::json> read_lines(const std::string& path) {
  std::vector<nlohmann::json> lines;
  std::ifstream in(path);
  for (std::string text; std::getline(in, text);) lines.push_back(nlohmann::json::parse(text));
  return lines;
}

/** The lines of a run's metrics.jsonl whose "type" is `type`. */
inline std::vector<nlohmann::json> metrics_of_type(const std::string& path, const std::string& type) {
  std::vector<nlohmann::json> lines;
  std::ifstream in(path);
  for (std::string text; std::getline(in, text);) {
    nlohmann::json line = nlohmann::json::parse(text);
    if (line["type"] == type) lines.push_back(std::move(line));
  }
  return lines;
}

/** metrics.jsonl lines by "type/iteration" (or "type/step"), without the wall-clock fields; a key
 *  written twice (a resume that repeated a line) throws. */
inline std::map<std::string, nlohmann::json> deterministic_metrics(const std::string& path) {
  std::map<std::string, nlohmann::json> lines;
  std::ifstream in(path);
  for (std::string text; std::getline(in, text);) {
    nlohmann::json line = nlohmann::json::parse(text);
    for (const char* key : {"minutes", "turns_per_s", "rollout_share", "seconds"}) line.erase(key);
    const std::string key = line["type"].get<std::string>() + "/" +
                            std::to_string(line.contains("iteration") ? line["iteration"].get<int>() : line["step"].get<int>());
    if (lines.count(key) > 0) throw std::runtime_error(key + " twice in " + path);
    lines[key] = line;
  }
  return lines;
}

}  // namespace turnrl::test
