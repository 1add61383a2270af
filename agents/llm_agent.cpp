#include "agents/llm_agent.h"

#include <chrono>
#include <stdexcept>
#include <string>

#include "agents/model/generation_engine.h"

namespace turnrl::agents {

LlmAgent::LlmAgent(std::shared_ptr<LanguageModel> model, SamplingParams params, std::string name, int max_batch, uint64_t prefix_cache_bytes)
    : model_(std::move(model)), params_(std::move(params)), name_(std::move(name)), max_batch_(max_batch),
      prefix_cache_bytes_(prefix_cache_bytes) {}

LlmAgent::~LlmAgent() = default;

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

std::vector<int32_t> LlmAgent::checked_prompt(const AgentPrompt& prompt) const {
  std::vector<int32_t> ids = encode_prompt(prompt.messages);
  if (ids.size() > max_prompt_tokens()) {
    throw std::length_error(name_ + ": a prompt of " + std::to_string(ids.size()) + " tokens does not fit the model's " +
                            std::to_string(model_->context_length()) + " positions with " + std::to_string(params_.max_new_tokens) +
                            " new tokens, even with the oldest turns dropped (shorten the instruction or the reply)");
  }
  return ids;
}

AgentReply LlmAgent::to_reply(std::vector<int32_t> prompt_ids, Generation generation) const {
  AgentReply reply;
  std::vector<int32_t> text_ids = generation.ids;
  if (generation.stopped && !text_ids.empty()) text_ids.pop_back();
  reply.text = model_->tokenizer().decode(text_ids, &reply.token_text_ends);
  if (generation.stopped) reply.token_text_ends.push_back(static_cast<uint32_t>(reply.text.size()));
  reply.prompt_ids = std::move(prompt_ids);
  reply.response_ids = std::move(generation.ids);
  reply.logprobs = std::move(generation.logprobs);
  reply.truncated = !generation.stopped;
  reply.prompt_tokens = reply.prompt_ids.size();
  reply.completion_tokens = reply.response_ids.size();
  return reply;
}

std::vector<AgentReply> LlmAgent::act(const std::vector<AgentPrompt>& prompts) {
  std::vector<std::vector<int32_t>> ids;
  ids.reserve(prompts.size());
  SamplingParams params = params_;
  params.row_seeds.clear();
  for (const auto& prompt : prompts) {
    ids.push_back(checked_prompt(prompt));
    params.row_seeds.push_back(row_seed(prompt));
  }
  const auto start = std::chrono::steady_clock::now();
  std::vector<Generation> generations = model_->generate(ids, params);
  generate_seconds_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::vector<AgentReply> replies;
  replies.reserve(prompts.size());
  for (size_t i = 0; i < prompts.size(); ++i) replies.push_back(to_reply(std::move(ids[i]), std::move(generations[i])));
  return replies;
}

void LlmAgent::submit(AgentPrompt prompt, ReplyHandler on_reply) {
  // Shared, so that a request the engine refuses is still answered exactly once.
  auto handler = std::make_shared<ReplyHandler>(std::move(on_reply));
  try {
    GenerationRequest request;
    request.prompt = checked_prompt(prompt);
    request.params = params_;
    request.params.row_seeds.clear();
    request.params.seed = row_seed(prompt);
    request.on_done = [this, prompt_ids = request.prompt, handler](GenerationResult&& result) {
      AgentResult reply;
      reply.error = result.error;
      if (!reply.error) {
        try {
          reply.reply = to_reply(prompt_ids, std::move(result.generation));
        } catch (...) {
          reply.error = std::current_exception();
        }
      }
      (*handler)(std::move(reply));
    };
    std::call_once(engine_started_, [this] { engine_ = std::make_unique<GenerationEngine>(model_, max_batch_, prefix_cache_bytes_); });
    engine_->submit(std::move(request));
  } catch (...) {
    (*handler)({{}, std::current_exception()});
  }
}

}  // namespace turnrl::agents
