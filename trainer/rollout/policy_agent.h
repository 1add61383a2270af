#pragma once
// The agent a run acts with: its model under the run's sampling settings (decoding constrained to
// the action tokens when configured). Training samples with it, evaluation acts greedily with it,
// and `turnrl eval --run` / `play --run` rebuild exactly the same agent from the run's folder.
#include <cstdint>
#include <memory>
#include <vector>

#include "agents/agent.h"
#include "agents/model/language_model.h"
#include "agents/model/tokenizer.h"
#include "trainer/config/train_config.h"

namespace turnrl::trainer {

/** The tokens the policy may emit when `sampling.action_tokens_only` (empty: the whole vocabulary):
 *  each action of every task (as configured) as one token where the vocabulary has it ("turn_left"),
 *  else the tokens of its name, `sampling.extra_tokens`, and the stop tokens when replies may be
 *  longer than one token. std::invalid_argument for an action or extra token the vocabulary lacks,
 *  or an action longer than `sampling.max_response_tokens`. */
std::vector<int32_t> action_vocabulary(const TrainConfig& config, const agents::Tokenizer& tokenizer);

agents::SamplingParams sampling_params(const TrainConfig& config, const std::vector<int32_t>& allowed_tokens, bool greedy,
                                       uint64_t seed);

/** A token-level agent over `model` with the run's sampling (greedy for evaluation). */
std::unique_ptr<agents::Agent> make_policy_agent(std::shared_ptr<agents::LanguageModel> model, const TrainConfig& config,
                                                 bool greedy, uint64_t seed = 0);

}  // namespace turnrl::trainer
