#pragma once
// Replies with an action name drawn uniformly from the env's actions (a baseline for sweeps, a
// model-free driver for rollout tests, and the writer of format data for supervised fine-tuning,
// where a share of its actions follows the observation).
#include <string>

#include "agents/agent.h"
#include "agents/reply_template.h"

namespace turnrl::agents {

class RandomAgent : public Agent {
 public:
  /** `reply_template`: the reply, with every "{action}" replaced by the drawn action's name
   *  (std::invalid_argument when it has none) and any "{aim}" left empty. `keyed_share`: the
   *  share of replies whose action is the observation's own, one fixed random action per text of
   *  the prompt's last message (a hash of it); the others are drawn uniformly. */
  explicit RandomAgent(std::string reply_template = "{action}", double keyed_share = 0.0);
  std::string name() const override { return "random"; }
  /** Throws std::invalid_argument when a prompt carries no action list. */
  std::vector<AgentReply> act(const std::vector<AgentPrompt>& prompts) override;

 private:
  ReplyTemplate reply_template_;
  double keyed_share_;
};

}  // namespace turnrl::agents
