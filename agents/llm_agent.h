#pragma once
// The local policy as an agent: chat-formats prompts with the model's tokenizer, generates in one
// batch, and returns ids and sampling log-probs for training. Torch-free header.
#include <memory>

#include "agents/agent.h"
#include "agents/model/language_model.h"

namespace turnrl::agents {

class LlmAgent : public Agent {
 public:
  LlmAgent(std::shared_ptr<LanguageModel> model, SamplingParams params, std::string name = "llm");
  std::string name() const override { return name_; }
  bool token_level() const override { return true; }
  std::vector<AgentReply> act(const std::vector<AgentPrompt>& prompts) override;
  memory::TokenCounter token_counter() const override;
  /** The model's context minus the reply's max_new_tokens. */
  size_t max_prompt_tokens() const override;
  std::vector<int32_t> encode_prompt(const std::vector<memory::ChatMessage>& messages) const override;
  /** Seconds spent inside LanguageModel::generate (for the share of turn time outside it). */
  double generate_seconds() const { return generate_seconds_; }

 private:
  std::shared_ptr<LanguageModel> model_;
  SamplingParams params_;
  std::string name_;
  double generate_seconds_ = 0.0;
};

}  // namespace turnrl::agents
