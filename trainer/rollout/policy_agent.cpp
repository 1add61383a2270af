#include "trainer/rollout/policy_agent.h"

#include <algorithm>
#include <stdexcept>

#include "agents/llm_agent.h"
#include "envs/registry.h"

namespace turnrl::trainer {

std::vector<int32_t> action_vocabulary(const TrainConfig& config, const agents::Tokenizer& tokenizer) {
  std::vector<int32_t> allowed;
  if (!config.sampling.action_tokens_only) return allowed;
  const int32_t unknown = tokenizer.token_id("<unk>");
  for (const std::string& id : config.env.ids) {
    // The actions of the env as configured (arith's depend on its max_value option).
    const std::unique_ptr<envs::Env> env = envs::make_env(id, config.env.options);
    for (const auto& action : env->actions()) {
      const std::vector<int32_t> ids = tokenizer.encode_reply(action.name);
      if (unknown >= 0 && std::find(ids.begin(), ids.end(), unknown) != ids.end()) {
        throw std::invalid_argument("action '" + action.name + "' of " + id + " is not in the model's vocabulary (it encodes to <unk>)");
      }
      if (std::ssize(ids) > config.sampling.max_response_tokens) {
        throw std::invalid_argument("action '" + action.name + "' of " + id + " takes " + std::to_string(ids.size()) +
                                    " tokens of the model's vocabulary, more than sampling.max_response_tokens (" +
                                    std::to_string(config.sampling.max_response_tokens) +
                                    "), so the policy could never name it: raise the limit, or draw a model whose vocabulary spells it "
                                    "in one token (the tiny presets do)");
      }
      allowed.insert(allowed.end(), ids.begin(), ids.end());
    }
  }
  for (const std::string& word : config.sampling.extra_tokens) {
    const int32_t token = tokenizer.token_id(word);
    if (token < 0) throw std::invalid_argument("sampling.extra_tokens: '" + word + "' is not one token of the model's vocabulary");
    allowed.push_back(token);
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
