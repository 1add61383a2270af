#include "agents/expert_agent.h"

#include <stdexcept>

namespace turnrl::agents {

ExpertAgent::ExpertAgent(std::string reply_template, envs::ExpertSight sight) : reply_template_(std::move(reply_template)), sight_(sight) {}

std::vector<AgentReply> ExpertAgent::act(const std::vector<AgentPrompt>& prompts) {
  std::vector<AgentReply> replies;
  replies.reserve(prompts.size());
  for (const auto& prompt : prompts) {
    if (!prompt.env) throw std::invalid_argument("expert agent: the prompt does not carry its env (only local episodes do)");
    const envs::Env& env = *prompt.env;
    AgentReply reply;
    const envs::ExpertMove move = envs::expert_move(env, prompt.seed, sight_);
    reply.text = reply_template_.fill(env.actions().at(static_cast<size_t>(move.action)).name, move.aim);
    replies.push_back(std::move(reply));
  }
  return replies;
}

}  // namespace turnrl::agents
