#include "trainer/run/checkpoint.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "trainer/run/run_folder.h"

namespace turnrl::trainer {

namespace fs = std::filesystem;

void save_checkpoint(const std::string& dir, LearnerState& learner, const CheckpointState& state, const std::string& config_yaml,
                     const std::string& tokenizer_dir) {
  const std::string temp = dir + ".tmp";
  fs::remove_all(temp);
  fs::create_directories(temp);
  agents::save_qwen2(learner.actor, temp + "/actor", tokenizer_dir);
  agents::save_qwen2(learner.critic, temp + "/critic", tokenizer_dir);
  torch::save(*learner.actor_optimizer, temp + "/actor_optimizer.pt");
  torch::save(*learner.critic_optimizer, temp + "/critic_optimizer.pt");
  nlohmann::json curve = nlohmann::json::array();
  for (const auto& p : state.curve) curve.push_back({p.minutes, p.iteration, p.progression, p.task_progression});
  std::ostringstream rng;
  rng << learner.shuffle_rng;
  nlohmann::json json = {{"iteration", state.iteration}, {"elapsed_seconds", state.elapsed_seconds}, {"setup_seconds", state.setup_seconds},
                         {"shuffle_rng", rng.str()}, {"curve", curve}};
  if (state.ranks.size() == 1) {
    json["rollout"] = state.ranks[0].rollout;
    json["reward_manager"] = state.ranks[0].reward_manager;
  } else {
    json["ranks"] = nlohmann::json::array();
    for (const RankState& rank : state.ranks) json["ranks"].push_back({{"rollout", rank.rollout}, {"reward_manager", rank.reward_manager}});
  }
  {
    std::ofstream out(temp + "/state.json");
    out << json.dump(1);
    if (!out.flush()) throw std::runtime_error(temp + "/state.json: write failed");
  }
  {
    std::ofstream out(temp + "/config.yaml");
    out << config_yaml;
    if (!out.flush()) throw std::runtime_error(temp + "/config.yaml: write failed");
  }
  swap_in_folder(temp, dir);
}

CheckpointState load_checkpoint(const std::string& dir, LearnerState& learner) {
  const std::string state_path = dir + "/state.json";
  std::ifstream in(state_path);
  if (!in) throw std::runtime_error(state_path + ": cannot open (not a checkpoint directory?)");
  const nlohmann::json json = nlohmann::json::parse(in, nullptr, false);
  if (!json.is_object() || !json.contains("iteration")) throw std::runtime_error(state_path + ": malformed");
  // Onto this run's device: a checkpoint saved on another (CPU and GPU, or another rank's GPU) resumes.
  torch::load(*learner.actor_optimizer, dir + "/actor_optimizer.pt", learner.device);
  torch::load(*learner.critic_optimizer, dir + "/critic_optimizer.pt", learner.device);
  CheckpointState state;
  try {
    state.iteration = json.at("iteration").get<int>();
    state.elapsed_seconds = json.at("elapsed_seconds").get<double>();
    state.setup_seconds = json.value("setup_seconds", 0.0);  // absent from checkpoints of earlier versions
    if (json.contains("ranks")) {
      for (const auto& rank : json.at("ranks")) state.ranks.push_back({rank.at("rollout"), rank.at("reward_manager")});
    } else {
      state.ranks.push_back({json.at("rollout"), json.at("reward_manager")});
    }
    std::istringstream(json.at("shuffle_rng").get<std::string>()) >> learner.shuffle_rng;
    for (const auto& p : json.at("curve")) {
      state.curve.push_back({p.at(0).get<double>(), p.at(1).get<int>(), p.at(2).get<double>(), p.at(3).get<std::vector<double>>()});
    }
  } catch (const nlohmann::json::exception& e) {
    throw std::runtime_error(state_path + ": malformed (" + e.what() + ")");
  }
  return state;
}

void save_model(const std::string& dir, LearnerState& learner, const std::string& tokenizer_dir, const BestModel* best) {
  const std::string temp = dir + ".tmp";
  fs::remove_all(temp);
  agents::save_qwen2(learner.actor, temp, tokenizer_dir);
  // Written before the swap, so a complete best folder always carries its record.
  if (best) std::ofstream(temp + "/best.json") << nlohmann::json{{"iteration", best->iteration}, {"progression", best->progression}}.dump() << "\n";
  swap_in_folder(temp, dir);
}

BestModel read_best_model(const std::string& dir) {
  const std::string found = complete_folder(dir, "best.json");
  if (found.empty()) return {};
  const nlohmann::json record = nlohmann::json::parse(std::ifstream(found + "/best.json"));
  return {record.at("iteration").get<int>(), record.at("progression").get<double>()};
}

void copy_model(const std::string& from, const std::string& to) {
  const std::string temp = to + ".tmp";
  fs::remove_all(temp);
  fs::copy(from, temp, fs::copy_options::recursive);
  swap_in_folder(temp, to);
}

}  // namespace turnrl::trainer
