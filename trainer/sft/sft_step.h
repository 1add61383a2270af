#pragma once
// The supervised step of trainer/sft/sft.h, on its own so that benchmarks run the format stage's
// arithmetic exactly; a torch-side header (sft.h keeps torch out of the commands that include it).
#include <cstdint>
#include <vector>

#include <torch/torch.h>

#include "agents/model/qwen2_model.h"

namespace turnrl::trainer {

class ProcessGroup;  // trainer/dist/distributed.h

struct SftStepResult {
  double loss = 0.0;    // mean negative log-likelihood of the target tokens, before the step
  double tokens = 0.0;  // target tokens in the batch
};

/** One AdamW step on the mean negative log-likelihood of `targets` after `prompts` (left-padded with
 *  `pad_id`), gradients clipped to `max_grad_norm`.
 *
 *  Data-parallel (`ranks`): `prompts` and `targets` are this rank's rows of a batch of
 *  `batch_tokens` target tokens in all (none: this rank adds no gradient); the loss and gradients
 *  are those of the whole batch, and so is the result. */
SftStepResult sft_step(agents::Qwen2Model& model, torch::optim::Optimizer& optimizer, const std::vector<std::vector<int32_t>>& prompts,
                       const std::vector<std::vector<int32_t>>& targets, int32_t pad_id, const torch::Device& device,
                       double max_grad_norm, ProcessGroup* ranks = nullptr, double batch_tokens = 0.0);

}  // namespace turnrl::trainer
