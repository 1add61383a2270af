#pragma once
// How the PPO learner acts, derived from its TrainConfig: the memory window, reply handling,
// the sampling parameters (decoding constrained to the action tokens when configured), and where
// the action starts inside a reply (for the reasoning/action KL split).
#include <cstdint>
#include <memory>
#include <vector>

#include "agents/language_model.h"
#include "agents/tokenizer.h"
#include "memory/history.h"
#include "trainer/env_slot.h"
#include "trainer/train_config.h"

namespace turnrl::trainer {

memory::HistoryConfig history_config(const TrainConfig& config);
ActionConfig action_config(const TrainConfig& config);

/** The tokens the policy may emit when `sampling.action_tokens_only` (empty: the whole vocabulary):
 *  each action of every task as one token where the vocabulary has it ("turn_left"), else the
 *  tokens of its name, plus the stop tokens when replies may be longer than one token. */
std::vector<int32_t> action_vocabulary(const TrainConfig& config, const agents::Tokenizer& tokenizer);

agents::SamplingParams sampling_params(const TrainConfig& config, const std::vector<int32_t>& allowed_tokens, bool greedy,
                                       uint64_t seed);

/** First response token of the action: 0 when decoding is constrained to action tokens, else the
 *  first token with text after the last "ACTION:", or ids.size() when there is none. */
int action_token_start(const std::vector<int32_t>& ids, const agents::Tokenizer& tokenizer, bool action_tokens_only);

}  // namespace turnrl::trainer
