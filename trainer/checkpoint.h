#pragma once
// Checkpoints written atomically: a complete directory appears under its final name or not at all.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include "agents/qwen2_model.h"
#include "trainer/learning_curve.h"

namespace turnrl::trainer {

struct CheckpointState {
  int iteration = 0;
  double elapsed_seconds = 0.0;
  nlohmann::json rollout;        // Rollout::state(): episodes begun and in flight
  std::string shuffle_rng;       // std::mt19937_64 state as text
  std::vector<EvalPoint> curve;  // evaluations so far
};

/** Writes actor/, critic/ (HF folders), both optimisers, state.json and config.yaml to `dir`. */
void save_checkpoint(const std::string& dir, agents::Qwen2Model& actor, agents::Qwen2Model& critic,
                     torch::optim::Optimizer& actor_optimizer, torch::optim::Optimizer& critic_optimizer,
                     const CheckpointState& state, const std::string& config_yaml);

/** Restores the optimisers and returns the state; models are loaded from dir/actor and dir/critic. */
CheckpointState load_checkpoint(const std::string& dir, torch::optim::Optimizer& actor_optimizer,
                                torch::optim::Optimizer& critic_optimizer);

}  // namespace turnrl::trainer
