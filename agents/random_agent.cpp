#include "agents/random_agent.h"

#include <random>
#include <stdexcept>

namespace turnrl::agents {

namespace {
constexpr std::string_view kPlaceholder = "{action}";
}

RandomAgent::RandomAgent(std::string reply_template) : reply_template_(std::move(reply_template)) {
  if (reply_template_.find(kPlaceholder) == std::string::npos) {
    throw std::invalid_argument("reply template '" + reply_template_ + "' has no {action}");
  }
}

std::vector<AgentReply> RandomAgent::act(const std::vector<AgentPrompt>& prompts) {
  std::vector<AgentReply> replies;
  replies.reserve(prompts.size());
  for (const auto& prompt : prompts) {
    if (!prompt.actions || prompt.actions->empty()) throw std::invalid_argument("random agent: prompt without an action list");
    std::mt19937_64 rng(prompt.seed);
    const size_t pick = std::uniform_int_distribution<size_t>(0, prompt.actions->size() - 1)(rng);
    const std::string& action = (*prompt.actions)[pick].name;
    AgentReply reply;
    reply.text = reply_template_;
    for (size_t at = reply.text.find(kPlaceholder); at != std::string::npos; at = reply.text.find(kPlaceholder, at + action.size())) {
      reply.text.replace(at, kPlaceholder.size(), action);
    }
    replies.push_back(std::move(reply));
  }
  return replies;
}

}  // namespace turnrl::agents
