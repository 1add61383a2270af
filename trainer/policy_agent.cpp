#include "trainer/policy_agent.h"

#include <algorithm>

#include "agents/llm_agent.h"
#include "envs/registry.h"

namespace turnrl::trainer {

std::vector<int32_t> action_vocabulary(const TrainConfig& config, const agents::Tokenizer& tokenizer) {
  std::vector<int32_t> allowed;
  if (!config.sampling.action_tokens_only) return allowed;
  for (const std::string& id : config.env.ids) {
    for (const auto& action : envs::family_of(id).actions) {
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

std::unique_ptr<agents::Agent> make_policy_agent(std::shared_ptr<agents::LanguageModel> model, const TrainConfig& config,
                                                 bool greedy, uint64_t seed) {
  const std::vector<int32_t> allowed = action_vocabulary(config, model->tokenizer());
  return std::make_unique<agents::LlmAgent>(std::move(model), sampling_params(config, allowed, greedy, seed),
                                            greedy ? "policy-greedy" : "policy");
}

}  // namespace turnrl::trainer
