#pragma once
// Replies with an action name drawn uniformly from the env's actions (a baseline for sweeps, a
// model-free driver for rollout tests, and the writer of format data for supervised fine-tuning).
#include <string>

#include "agents/agent.h"

namespace turnrl::agents {

class RandomAgent : public Agent {
 public:
  /** `reply_template`: the reply, with every "{action}" replaced by the drawn action's name
   *  (std::invalid_argument when it has none). */
  explicit RandomAgent(std::string reply_template = "{action}");
  std::string name() const override { return "random"; }
  /** Throws std::invalid_argument when a prompt carries no action list. */
  std::vector<AgentReply> act(const std::vector<AgentPrompt>& prompts) override;

 private:
  std::string reply_template_;
};

}  // namespace turnrl::agents
