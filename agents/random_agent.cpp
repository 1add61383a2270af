#include "agents/random_agent.h"

#include <random>
#include <stdexcept>

namespace turnrl::agents {

std::vector<AgentReply> RandomAgent::act(const std::vector<AgentPrompt>& prompts) {
  std::vector<AgentReply> replies;
  replies.reserve(prompts.size());
  for (const auto& prompt : prompts) {
    if (!prompt.actions || prompt.actions->empty()) throw std::invalid_argument("random agent: prompt without an action list");
    std::mt19937_64 rng(prompt.seed);
    const size_t pick = std::uniform_int_distribution<size_t>(0, prompt.actions->size() - 1)(rng);
    AgentReply reply;
    reply.text = (*prompt.actions)[pick].name;
    replies.push_back(std::move(reply));
  }
  return replies;
}

}  // namespace turnrl::agents
