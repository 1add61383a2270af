#pragma once
// The PPO update: epochs of shuffled mini-batches, the clipped policy loss with entropy bonus
// (actor), the clipped value loss with the first-token weight (critic), gradient clipping.
#include <cstddef>
#include <vector>

#include <nlohmann/json.hpp>

#include "trainer/algo/learner_state.h"
#include "trainer/rollout/rollout_buffer.h"
#include "trainer/algo/targets.h"

namespace turnrl::trainer {

/** Runs `config.ppo.epochs` over at most `max_rows` shuffled turns; the actor moves only when
 *  `train_actor` (critic warm-up). Returns the mean losses and diagnostics.
 *
 *  Data-parallel (learner.ranks): each rank passes its own batch and targets; the shuffle and the
 *  mini-batches are those of the combined batch (the ranks' collections side by side, as one
 *  collection of all their slots; `max_rows` counts its rows), each rank computes its rows' share
 *  of every token mean, and the gradients are summed over the ranks before each step: every rank
 *  takes the step one process would take on the combined batch. */
nlohmann::json ppo_update(LearnerState& learner, const RolloutBatch& batch, const TrainingTargets& targets, bool train_actor,
                          size_t max_rows);

/** One optimiser step on `loss` with the gradient norm clipped to `max_norm`; returns the norm
 *  before clipping. With `ranks`, the gradients are summed over them first (an undefined `loss`:
 *  this rank adds none). */
double clipped_step(torch::optim::Optimizer& optimizer, const std::vector<torch::Tensor>& parameters, const torch::Tensor& loss,
                    double max_norm, ProcessGroup* ranks = nullptr);

}  // namespace turnrl::trainer
