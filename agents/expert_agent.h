#pragma once
// The scripted expert of the prompt's env (envs/expert.h) as an agent: it reads the env's state
// through AgentPrompt::env and writes its action into a reply template. It writes a format
// stage's demonstrations (`format.policy: expert`) and can be evaluated like any agent.
#include <string>

#include "agents/agent.h"
#include "agents/reply_template.h"
#include "envs/expert.h"

namespace turnrl::agents {

class ExpertAgent : public Agent {
 public:
  explicit ExpertAgent(std::string reply_template = "{action}", envs::ExpertSight sight = envs::ExpertSight::kFull);
  std::string name() const override { return sight_ == envs::ExpertSight::kView ? "expert-view" : "expert"; }
  /** Throws std::invalid_argument for a prompt without its env or whose env has no expert. */
  std::vector<AgentReply> act(const std::vector<AgentPrompt>& prompts) override;
  /** The reply to one prompt, and whether the expert's move was a guess (envs::ExpertMove::guess). */
  struct Label {
    std::string text;
    bool guess = false;
  };
  Label label(const AgentPrompt& prompt) const;

 private:
  ReplyTemplate reply_template_;
  envs::ExpertSight sight_;
};

}  // namespace turnrl::agents
