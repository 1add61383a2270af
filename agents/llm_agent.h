#pragma once
// The local policy as an agent: chat-formats prompts with the model's tokenizer and generates,
// either a batch at once (act) or one prompt at a time on the continuous-batching engine (submit:
// a request joins the running batch at its next step), returning ids and sampling log-probs for
// training. Torch-free header.
#include <cstdint>
#include <memory>
#include <mutex>

#include "agents/agent.h"
#include "agents/model/language_model.h"

namespace turnrl::agents {

class GenerationEngine;

class LlmAgent : public Agent {
 public:
  /** `max_batch`: sequences the engine behind submit() decodes together; `prefix_cache_bytes`: its
   *  prefix cache's memory (0: none; agents/model/prefix_cache.h). */
  LlmAgent(std::shared_ptr<LanguageModel> model, SamplingParams params, std::string name = "llm", int max_batch = 64,
           uint64_t prefix_cache_bytes = 0);
  ~LlmAgent() override;
  std::string name() const override { return name_; }
  bool token_level() const override { return true; }
  std::vector<AgentReply> act(const std::vector<AgentPrompt>& prompts) override;
  /** On the engine (started by the first call); the reply equals act()'s for the same prompt and
   *  seed. The handler runs on the engine's thread. */
  void submit(AgentPrompt prompt, ReplyHandler on_reply) override;
  bool asynchronous() const override { return true; }
  memory::TokenCounter token_counter() const override;
  /** The model's context minus the reply's max_new_tokens. */
  size_t max_prompt_tokens() const override;
  std::vector<int32_t> encode_prompt(const std::vector<memory::ChatMessage>& messages) const override;
  /** Seconds spent inside LanguageModel::generate (for the share of turn time outside it). */
  double generate_seconds() const { return generate_seconds_; }

 private:
  /** The prompt's ids; throws std::length_error when they do not fit beside the reply. */
  std::vector<int32_t> checked_prompt(const AgentPrompt& prompt) const;
  /** The per-request sampling stream: the agent's seed mixed with the prompt's. */
  uint64_t row_seed(const AgentPrompt& prompt) const { return params_.seed * 0x9E3779B97F4A7C15ULL + prompt.seed; }
  AgentReply to_reply(std::vector<int32_t> prompt_ids, Generation generation) const;

  std::shared_ptr<LanguageModel> model_;
  SamplingParams params_;
  std::string name_;
  int max_batch_;
  uint64_t prefix_cache_bytes_;
  double generate_seconds_ = 0.0;
  std::once_flag engine_started_;
  std::unique_ptr<GenerationEngine> engine_;
};

}  // namespace turnrl::agents
