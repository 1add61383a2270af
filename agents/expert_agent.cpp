#include "agents/expert_agent.h"

#include <stdexcept>

namespace turnrl::agents {

ExpertAgent::ExpertAgent(std::string reply_template, envs::ExpertSight sight) : reply_template_(std::move(reply_template)), sight_(sight) {}

ExpertAgent::Label ExpertAgent::label(const AgentPrompt& prompt) const {
  if (!prompt.env) throw std::invalid_argument("expert agent: the prompt does not carry its env (only local episodes do)");
  const envs::Env& env = *prompt.env;
  const envs::ExpertMove move = envs::expert_move(env, prompt.seed, sight_);
  return {reply_template_.fill(env.actions().at(static_cast<size_t>(move.action)).name, move.aim), move.guess};
}

std::vector<AgentReply> ExpertAgent::act(const std::vector<AgentPrompt>& prompts) {
  std::vector<AgentReply> replies;
  replies.reserve(prompts.size());
  for (const auto& prompt : prompts) {
    AgentReply reply;
    reply.text = label(prompt).text;
    replies.push_back(std::move(reply));
  }
  return replies;
}

}  // namespace turnrl::agents
