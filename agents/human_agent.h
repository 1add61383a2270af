#pragma once
// A person at the terminal: shows the prompt an LLM would get and reads one reply line per turn.
#include <iosfwd>

#include "agents/agent.h"

namespace turnrl::agents {

class HumanAgent : public Agent {
 public:
  HumanAgent(std::istream& in, std::ostream& out) : in_(in), out_(out) {}
  std::string name() const override { return "human"; }
  /** Prompts are answered one after another; end of input throws std::runtime_error. */
  std::vector<AgentReply> act(const std::vector<AgentPrompt>& prompts) override;

 private:
  std::istream& in_;
  std::ostream& out_;
};

}  // namespace turnrl::agents
