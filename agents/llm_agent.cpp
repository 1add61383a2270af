#include "agents/llm_agent.h"

#include <chrono>
#include <stdexcept>
#include <string>

namespace turnrl::agents {

LlmAgent::LlmAgent(std::shared_ptr<LanguageModel> model, SamplingParams params, std::string name)
    : model_(std::move(model)), params_(std::move(params)), name_(std::move(name)) {}

std::vector<int32_t> LlmAgent::encode_prompt(const std::vector<memory::ChatMessage>& messages) const {
  return model_->tokenizer().encode_chat(messages, true);
}

memory::TokenCounter LlmAgent::token_counter() const {
  return [this](const std::vector<memory::ChatMessage>& messages) { return encode_prompt(messages).size(); };
}

size_t LlmAgent::max_prompt_tokens() const {
  const int64_t room = model_->context_length() - params_.max_new_tokens;
  return room > 0 ? static_cast<size_t>(room) : 1;
}

std::vector<AgentReply> LlmAgent::act(const std::vector<AgentPrompt>& prompts) {
  std::vector<std::vector<int32_t>> ids;
  ids.reserve(prompts.size());
  SamplingParams params = params_;
  params.row_seeds.clear();
  for (const auto& prompt : prompts) {
    ids.push_back(encode_prompt(prompt.messages));
    if (ids.back().size() > max_prompt_tokens()) {
      throw std::length_error(name_ + ": a prompt of " + std::to_string(ids.back().size()) + " tokens does not fit the model's " +
                              std::to_string(model_->context_length()) + " positions with " +
                              std::to_string(params_.max_new_tokens) +
                              " new tokens, even with the oldest turns dropped (shorten the instruction or the reply)");
    }
    params.row_seeds.push_back(params_.seed * 0x9E3779B97F4A7C15ULL + prompt.seed);
  }
  const auto start = std::chrono::steady_clock::now();
  std::vector<Generation> generations = model_->generate(ids, params);
  generate_seconds_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::vector<AgentReply> replies(prompts.size());
  for (size_t i = 0; i < prompts.size(); ++i) {
    Generation& generation = generations[i];
    std::vector<int32_t> text_ids = generation.ids;
    if (generation.stopped && !text_ids.empty()) text_ids.pop_back();
    replies[i].text = model_->tokenizer().decode(text_ids, &replies[i].token_text_ends);
    if (generation.stopped) replies[i].token_text_ends.push_back(static_cast<uint32_t>(replies[i].text.size()));
    replies[i].prompt_ids = std::move(ids[i]);
    replies[i].response_ids = std::move(generation.ids);
    replies[i].logprobs = std::move(generation.logprobs);
    replies[i].truncated = !generation.stopped;
  }
  return replies;
}

}  // namespace turnrl::agents
