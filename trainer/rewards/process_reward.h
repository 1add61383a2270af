#pragma once
// Training-free process rewards (rewards.md section 2, VinePPO-style): the value of a reply prefix
// is the mean log-probability the policy gives the known answer's tokens when forced to answer after
// that prefix; a segment's marginal utility U_i = V(prefix_i) - V(prefix_{i-1}) is its process
// reward, placed on the segment's last token. The outcome reward stays on the reply's last token, in
// its own stream, so that the two can be normalised separately.
#include <cstddef>
#include <string>
#include <vector>

#include "trainer/rewards/segmentation.h"

namespace turnrl::trainer::rewards {

/** How replies are valued in training (trainer/rewards/process_scorer.h; the `reward.process` config section). */
struct ProcessRewardConfig {
  SegmentationConfig segmentation;
  /** Text after a prefix that forces an answer now (its tokens, then the answer's, are scored); the
   *  answer is encoded on its own, so end the prompt where the tokenizer starts a new token. */
  std::string answer_prompt = "\nThe answer is ";
  /** Prefixes per forward pass at most. */
  size_t batch_prefixes = 64;
  /** Multiplies every U_i. Log-probability changes are small (~0.01) beside a 0-1 outcome; estimators
   *  that rescale each stream (grpo-style) do not need it, those that only baseline it (rloo) do. */
  double weight = 1.0;
};

/** V(prefix): the mean of the answer tokens' log-probabilities (std::invalid_argument when empty). */
double prefix_value(const std::vector<double>& answer_token_logprobs);

/** U_i = V_i - V_{i-1} for i = 1..n-1, from `prefix_values` V_0 (no segment yet) .. V_{n-1}. */
std::vector<double> marginal_utilities(const std::vector<double>& prefix_values);

/** A reply's token rewards in two streams of `num_tokens` entries each. */
struct ReplyRewards {
  std::vector<float> process;  // U_i on the last token of segment i
  std::vector<float> outcome;  // the outcome reward on the last token
};

/**
 * `segment_ends` as segmentation returns them (ascending, the last one = num_tokens - 1);
 * `prefix_values` has one more entry: V before the first segment, then V after each segment.
 * Throws std::invalid_argument when the shapes disagree.
 */
ReplyRewards process_rewards(size_t num_tokens, const std::vector<size_t>& segment_ends,
                             const std::vector<double>& prefix_values, double outcome_reward);

}  // namespace turnrl::trainer::rewards
