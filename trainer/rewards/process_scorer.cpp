#include "trainer/rewards/process_scorer.h"

#include <algorithm>
#include <stdexcept>


namespace turnrl::trainer {
namespace {

/** The reply's tokens as text pieces that concatenate to its decoded text (what segmentation reads). */
std::vector<std::string> token_texts(const agents::Tokenizer& tokenizer, const std::vector<int32_t>& ids) {
  std::vector<uint32_t> ends;
  const std::string text = tokenizer.decode(ids, &ends);
  std::vector<std::string> pieces;
  uint32_t begin = 0;
  for (uint32_t end : ends) {
    pieces.push_back(text.substr(begin, end - begin));
    begin = end;
  }
  return pieces;
}

/** One turn's prefixes to value: the empty one, then one per segment end. */
struct TurnPrefixes {
  size_t first = 0;  // index of the empty prefix's row in the batch of contexts
  std::vector<size_t> segment_ends;
};

}  // namespace

std::vector<double> prefix_values(agents::LanguageModel& model, const std::vector<std::vector<int32_t>>& contexts,
                                  const std::vector<std::vector<int32_t>>& answers, const std::vector<int32_t>& allowed_tokens,
                                  size_t batch) {
  if (contexts.size() != answers.size()) throw std::invalid_argument("prefix_values: one answer per context");
  if (batch == 0) throw std::invalid_argument("prefix_values: batch must be >= 1");
  for (size_t j = 0; j < contexts.size(); ++j) {
    if (contexts[j].empty() || answers[j].empty()) throw std::invalid_argument("prefix_values: row " + std::to_string(j) + " has an empty context or answer");
    if (static_cast<int64_t>(contexts[j].size() + answers[j].size()) > model.context_length()) {
      throw std::invalid_argument("prefix_values: row " + std::to_string(j) + " has " + std::to_string(contexts[j].size() + answers[j].size()) +
                                  " tokens, more than the model's " + std::to_string(model.context_length()) + " positions");
    }
  }
  std::vector<double> values;
  values.reserve(contexts.size());
  for (size_t start = 0; start < contexts.size(); start += batch) {
    const size_t end = std::min(contexts.size(), start + batch);
    const std::vector<std::vector<int32_t>> chunk_contexts(contexts.begin() + static_cast<long>(start), contexts.begin() + static_cast<long>(end));
    const std::vector<std::vector<int32_t>> chunk_answers(answers.begin() + static_cast<long>(start), answers.begin() + static_cast<long>(end));
    for (const std::vector<float>& logprobs : model.score(chunk_contexts, chunk_answers, allowed_tokens)) {
      values.push_back(rewards::prefix_value(std::vector<double>(logprobs.begin(), logprobs.end())));
    }
  }
  return values;
}

ProcessRewardScorer::ProcessRewardScorer(std::shared_ptr<agents::LanguageModel> policy, rewards::ProcessRewardConfig config,
                                         std::vector<int32_t> allowed_tokens)
    : policy_(std::move(policy)), config_(std::move(config)), allowed_tokens_(std::move(allowed_tokens)) {
  answer_prompt_ids_ = policy_->tokenizer().encode(config_.answer_prompt);
}

std::vector<SampleScores> ProcessRewardScorer::score(const std::vector<const ScoringSample*>& samples) {
  const agents::Tokenizer& tokenizer = policy_->tokenizer();
  const std::vector<int32_t>& stops = tokenizer.stop_ids();
  std::vector<std::vector<int32_t>> contexts, answers;
  std::vector<std::vector<TurnPrefixes>> prefixes(samples.size());
  std::vector<SampleScores> out(samples.size());
  for (size_t s = 0; s < samples.size(); ++s) {
    for (const TurnRecord& turn : samples[s]->turns) {
      out[s].emplace_back(turn.response_ids.size(), 0.0f);
      prefixes[s].emplace_back();
      if (turn.reference_answer.empty() || turn.response_ids.empty()) continue;
      const std::vector<int32_t> answer = tokenizer.encode(turn.reference_answer);
      TurnPrefixes& turn_prefixes = prefixes[s].back();
      turn_prefixes.first = contexts.size();
      turn_prefixes.segment_ends = rewards::segment_ends(token_texts(tokenizer, turn.response_ids), config_.segmentation);
      // The reply's stop token closes the reply: prefixes end before it, so the answer prompt continues the text.
      size_t usable = turn.response_ids.size();
      if (std::find(stops.begin(), stops.end(), turn.response_ids.back()) != stops.end()) --usable;
      std::vector<size_t> lengths = {0};
      for (size_t end : turn_prefixes.segment_ends) lengths.push_back(std::min(end + 1, usable));
      for (size_t length : lengths) {
        std::vector<int32_t> context = turn.prompt_ids;
        context.insert(context.end(), turn.response_ids.begin(), turn.response_ids.begin() + static_cast<long>(length));
        context.insert(context.end(), answer_prompt_ids_.begin(), answer_prompt_ids_.end());
        contexts.push_back(std::move(context));
        answers.push_back(answer);
      }
    }
  }
  const std::vector<double> values = prefix_values(*policy_, contexts, answers, allowed_tokens_, config_.batch_prefixes);
  for (size_t s = 0; s < samples.size(); ++s) {
    for (size_t t = 0; t < samples[s]->turns.size(); ++t) {
      const TurnPrefixes& turn_prefixes = prefixes[s][t];
      if (turn_prefixes.segment_ends.empty()) continue;
      const auto first = values.begin() + static_cast<long>(turn_prefixes.first);
      const std::vector<double> turn_values(first, first + static_cast<long>(turn_prefixes.segment_ends.size() + 1));
      out[s][t] = rewards::process_rewards(out[s][t].size(), turn_prefixes.segment_ends, turn_values, 0.0).process;
      for (float& u : out[s][t]) u *= static_cast<float>(config_.weight);
    }
  }
  return out;
}

}  // namespace turnrl::trainer
