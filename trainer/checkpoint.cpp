#include "trainer/checkpoint.h"

#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

namespace turnrl::trainer {

namespace fs = std::filesystem;

void save_checkpoint(const std::string& dir, agents::Qwen2Model& actor, agents::Qwen2Model& critic,
                     torch::optim::Optimizer& actor_optimizer, torch::optim::Optimizer& critic_optimizer,
                     const CheckpointState& state, const std::string& config_yaml) {
  const std::string temp = dir + ".tmp", old = dir + ".old";
  fs::remove_all(temp);
  fs::create_directories(temp);
  agents::save_qwen2(actor, temp + "/actor");
  agents::save_qwen2(critic, temp + "/critic");
  torch::save(actor_optimizer, temp + "/actor_optimizer.pt");
  torch::save(critic_optimizer, temp + "/critic_optimizer.pt");
  nlohmann::json curve = nlohmann::json::array();
  for (const auto& p : state.curve) curve.push_back({p.minutes, p.iteration, p.success, p.task_success});
  {
    std::ofstream out(temp + "/state.json");
    out << nlohmann::json{{"iteration", state.iteration},
                          {"elapsed_seconds", state.elapsed_seconds},
                          {"rollout", state.rollout},
                          {"shuffle_rng", state.shuffle_rng},
                          {"curve", curve}}
               .dump(1);
    if (!out.flush()) throw std::runtime_error(temp + "/state.json: write failed");
  }
  std::ofstream(temp + "/config.yaml") << config_yaml;
  // Swap in the new directory: the previous checkpoint stays valid until the rename.
  fs::remove_all(old);
  if (fs::exists(dir)) fs::rename(dir, old);
  fs::rename(temp, dir);
  fs::remove_all(old);
}

CheckpointState load_checkpoint(const std::string& dir, torch::optim::Optimizer& actor_optimizer,
                                torch::optim::Optimizer& critic_optimizer) {
  const std::string state_path = dir + "/state.json";
  std::ifstream in(state_path);
  if (!in) throw std::runtime_error(state_path + ": cannot open (not a checkpoint directory?)");
  const nlohmann::json json = nlohmann::json::parse(in, nullptr, false);
  if (!json.is_object() || !json.contains("iteration")) throw std::runtime_error(state_path + ": malformed");
  torch::load(actor_optimizer, dir + "/actor_optimizer.pt");
  torch::load(critic_optimizer, dir + "/critic_optimizer.pt");
  CheckpointState state;
  state.iteration = json["iteration"].get<int>();
  state.elapsed_seconds = json["elapsed_seconds"].get<double>();
  if (!json.contains("rollout")) throw std::runtime_error(state_path + ": no rollout state (written by an older turnrl?)");
  state.rollout = json["rollout"];
  state.shuffle_rng = json["shuffle_rng"].get<std::string>();
  for (const auto& p : json.at("curve")) {
    state.curve.push_back({p.at(0).get<double>(), p.at(1).get<int>(), p.at(2).get<double>(), p.at(3).get<std::vector<double>>()});
  }
  return state;
}

}  // namespace turnrl::trainer
