#include "agents/human_agent.h"

#include <istream>
#include <ostream>
#include <stdexcept>

namespace turnrl::agents {

std::vector<AgentReply> HumanAgent::act(const std::vector<AgentPrompt>& prompts) {
  std::vector<AgentReply> replies;
  for (const auto& prompt : prompts) {
    for (const auto& message : prompt.messages) out_ << "--- " << message.role << " ---\n" << message.content << "\n";
    out_ << "> " << std::flush;
    std::string line;
    if (!std::getline(in_, line)) throw std::runtime_error("human agent: end of input");
    AgentReply reply;
    reply.text = line;
    replies.push_back(std::move(reply));
  }
  return replies;
}

}  // namespace turnrl::agents
