#include "trainer/acting.h"

#include <algorithm>
#include <string_view>

#include "envs/registry.h"

namespace turnrl::trainer {

memory::HistoryConfig history_config(const TrainConfig& config) {
  memory::HistoryConfig history;
  history.max_turns = config.env.history;
  history.token_budget = static_cast<size_t>(config.env.prompt_budget);
  if (config.env.prompt_format == "verlog") {
    history.layout = memory::PromptLayout::kVerlog;
    history.suffix = memory::verlog_format_instruction();
  } else if (config.env.prompt_format == "compact") {
    history.suffix.clear();
  }
  return history;
}

ActionConfig action_config(const TrainConfig& config) {
  ActionConfig actions;
  actions.reply_format = config.env.reply_format == "balrog" ? envs::ReplyFormat::kBalrogNaive : envs::ReplyFormat::kActionTag;
  actions.invalid_action_penalty = config.env.invalid_penalty;
  actions.history_entry = config.env.history_entry == "raw" ? HistoryEntry::kRawReply : HistoryEntry::kExecutedAction;
  actions.binary_reward = config.env.binary_reward;
  if (config.env.prompt_format == "compact") {
    actions.goal_as_instruction = true;
  } else if (config.env.prompt_format == "balrog") {
    actions.feedback_on_invalid_action = true;  // BALROG's note in the next observation
  }
  return actions;
}

std::vector<int32_t> action_vocabulary(const TrainConfig& config, const agents::Tokenizer& tokenizer) {
  std::vector<int32_t> allowed;
  if (!config.sampling.action_tokens_only) return allowed;
  for (const std::string& id : config.env.ids) {
    for (const auto& action : envs::make_env(id, config.env.options)->actions()) {
      std::string joined = action.name;
      std::replace(joined.begin(), joined.end(), ' ', '_');
      const int32_t single = tokenizer.token_id(joined);
      const std::vector<int32_t> ids = single >= 0 ? std::vector<int32_t>{single} : tokenizer.encode(action.name);
      allowed.insert(allowed.end(), ids.begin(), ids.end());
    }
  }
  if (config.sampling.max_response_tokens > 1) {
    allowed.insert(allowed.end(), tokenizer.stop_ids().begin(), tokenizer.stop_ids().end());
  }
  std::sort(allowed.begin(), allowed.end());
  allowed.erase(std::unique(allowed.begin(), allowed.end()), allowed.end());
  return allowed;
}

agents::SamplingParams sampling_params(const TrainConfig& config, const std::vector<int32_t>& allowed_tokens, bool greedy,
                                       uint64_t seed) {
  agents::SamplingParams params;
  params.temperature = static_cast<float>(config.sampling.temperature);
  params.top_p = static_cast<float>(config.sampling.top_p);
  params.max_new_tokens = config.sampling.max_response_tokens;
  params.greedy = greedy;
  params.seed = seed;
  params.allowed_tokens = allowed_tokens;
  return params;
}

int action_token_start(const std::vector<int32_t>& ids, const agents::Tokenizer& tokenizer, bool action_tokens_only) {
  if (action_tokens_only) return 0;
  agents::StreamingDecoder decoder(tokenizer);
  std::string text;
  std::vector<size_t> text_end(ids.size());  // length of the text once token k is decoded
  for (size_t k = 0; k < ids.size(); ++k) {
    text += decoder.push(ids[k]);
    text_end[k] = text.size();
  }
  constexpr std::string_view kMarker = "ACTION:";
  const size_t marker = text.rfind(kMarker);
  if (marker == std::string::npos) return static_cast<int>(ids.size());
  const size_t action_begin = marker + kMarker.size();
  const auto first = std::upper_bound(text_end.begin(), text_end.end(), action_begin);
  return static_cast<int>(first - text_end.begin());
}

}  // namespace turnrl::trainer
