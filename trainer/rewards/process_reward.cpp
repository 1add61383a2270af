#include "trainer/rewards/process_reward.h"

#include <stdexcept>

namespace turnrl::trainer::rewards {

double prefix_value(const std::vector<double>& answer_token_logprobs) {
  if (answer_token_logprobs.empty()) throw std::invalid_argument("prefix_value: the answer has no token");
  double sum = 0.0;
  for (double logprob : answer_token_logprobs) sum += logprob;
  return sum / static_cast<double>(answer_token_logprobs.size());
}

std::vector<double> marginal_utilities(const std::vector<double>& prefix_values) {
  std::vector<double> utilities;
  for (size_t i = 1; i < prefix_values.size(); ++i) utilities.push_back(prefix_values[i] - prefix_values[i - 1]);
  return utilities;
}

ReplyRewards process_rewards(size_t num_tokens, const std::vector<size_t>& segment_ends,
                             const std::vector<double>& prefix_values, double outcome_reward) {
  if (num_tokens == 0 || segment_ends.empty() || segment_ends.back() != num_tokens - 1) {
    throw std::invalid_argument("process_rewards: the last segment must end on the reply's last token");
  }
  if (prefix_values.size() != segment_ends.size() + 1) {
    throw std::invalid_argument("process_rewards: need one prefix value per segment plus the empty prefix's");
  }
  ReplyRewards rewards{std::vector<float>(num_tokens, 0.0f), std::vector<float>(num_tokens, 0.0f)};
  const std::vector<double> utilities = marginal_utilities(prefix_values);
  for (size_t i = 0; i < segment_ends.size(); ++i) {
    if (i > 0 && segment_ends[i] <= segment_ends[i - 1]) {
      throw std::invalid_argument("process_rewards: segment ends must ascend");
    }
    rewards.process[segment_ends[i]] = static_cast<float>(utilities[i]);
  }
  rewards.outcome.back() = static_cast<float>(outcome_reward);
  return rewards;
}

}  // namespace turnrl::trainer::rewards
