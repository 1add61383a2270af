#pragma once
// Replies with an action name drawn uniformly from the env's actions (a baseline for sweeps and a
// model-free driver for rollout tests).
#include "agents/agent.h"

namespace turnrl::agents {

class RandomAgent : public Agent {
 public:
  std::string name() const override { return "random"; }
  /** Throws std::invalid_argument when a prompt carries no action list. */
  std::vector<AgentReply> act(const std::vector<AgentPrompt>& prompts) override;
};

}  // namespace turnrl::agents
