#pragma once
// What the PPO learner owns: the actor, the critic, the frozen reference policy, their optimisers,
// the shuffle stream of the mini-batches and, in a data-parallel run, its ranks. Targets
// (trainer/algo/targets.*) and the update (trainer/algo/ppo_update.*) read and change it; checkpoints save it.
#include <cstdint>
#include <memory>
#include <random>
#include <vector>

#include <torch/torch.h>

#include "agents/model/qwen2_model.h"
#include "trainer/algo/advantages.h"
#include "trainer/rewards/reward_manager.h"
#include "trainer/config/train_config.h"

namespace turnrl::trainer {

class ProcessGroup;  // trainer/dist/distributed.h

struct LearnerState {
  TrainConfig config;
  torch::Device device{torch::kCPU};
  agents::Qwen2Model actor{nullptr}, critic{nullptr}, reference{nullptr};
  std::unique_ptr<torch::optim::AdamW> actor_optimizer, critic_optimizer;
  Estimator estimator = Estimator::kGae;
  /** The reward stage's manager (env or episode); its state goes into checkpoints. */
  std::unique_ptr<rewards::RewardManager> reward_manager;
  /** The restricted vocabulary of the policy (empty: all tokens), in sampling and scoring alike. */
  std::vector<int32_t> allowed_tokens;
  int32_t pad_id = 0;
  std::mt19937_64 shuffle_rng;  // the same on every rank: they split one shuffle of the combined batch
  /** The ranks of a data-parallel run (null: one process): each holds its own collection, and the
   *  targets and the update treat all of them as one batch. */
  std::shared_ptr<ProcessGroup> ranks;

  bool uses_critic() const { return estimator == Estimator::kGae; }
};

}  // namespace turnrl::trainer
