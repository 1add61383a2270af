#pragma once
// Training-free process rewards in training (rewards.md section 2), scored on the streaming reward
// path while the batch is generated: each finished reply is segmented at discourse markers, the value
// of every reply prefix that ends a segment (and of the empty prefix) is
//   V(prefix) = mean_i log P(a_i | prompt + prefix + answer_prompt + a_<i)
// under the current actor, with a the env's reference answer for the turn (Env::reference_answer()),
// and U_i = V(prefix_i) - V(prefix_{i-1}) goes on the last token of segment i
// (trainer/rewards/process_reward.h). Torch-free header: the actor is reached through the
// LanguageModel facade over the trainer's live module.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "agents/model/language_model.h"
#include "trainer/rewards/reward_stream.h"
#include "trainer/rewards/process_reward.h"

namespace turnrl::trainer {

/**
 * V(prefix) of each row: the mean log-probability `model` gives the tokens of `answers[j]` after
 * `contexts[j]` (prefix and answer prompt already joined), `allowed_tokens` restricting the policy as
 * in sampling (empty: the whole vocabulary). Batched, `batch` rows per forward pass.
 * std::invalid_argument for an empty context or answer, or a row longer than the model's context.
 */
std::vector<double> prefix_values(agents::LanguageModel& model, const std::vector<std::vector<int32_t>>& contexts,
                                  const std::vector<std::vector<int32_t>>& answers, const std::vector<int32_t>& allowed_tokens,
                                  size_t batch);

class ProcessRewardScorer final : public SampleScorer {
 public:
  /** `policy`: the actor as it samples (its tokenizer segments replies and encodes answers). */
  ProcessRewardScorer(std::shared_ptr<agents::LanguageModel> policy, rewards::ProcessRewardConfig config, std::vector<int32_t> allowed_tokens);

  /** Per turn the process rewards U_i (times the config's weight) on the segments' last tokens, all
   *  prefixes of the samples scored together; a turn without a reference answer gets zeros. */
  std::vector<SampleScores> score(const std::vector<const ScoringSample*>& samples) override;

 private:
  std::shared_ptr<agents::LanguageModel> policy_;
  rewards::ProcessRewardConfig config_;
  std::vector<int32_t> allowed_tokens_;
  std::vector<int32_t> answer_prompt_ids_;
};

}  // namespace turnrl::trainer
