#pragma once
// A tiny deterministic env for rollout tests: the episode terminates when "finish" is chosen on
// an even step, and the time limit (3 + seed % 4 steps) truncates it otherwise.
#include <string>

#include "envs/env.h"

namespace turnrl::test {

class CountingEnv : public envs::Env {
 public:
  const std::string& id() const override { return id_; }
  void reset(uint64_t seed) override {
    seed_ = seed;
    steps_ = 0;
    started_ = true;
  }
  envs::StepResult step(int action) override {
    check_action(action);
    if (!started_) throw std::logic_error("step before reset");
    ++steps_;
    envs::StepResult result;
    if (action == 1 && steps_ % 2 == 0) {
      result.reward = 1.0;
      result.terminated = true;
    }
    result.truncated = !result.terminated && steps_ >= max_steps();
    return result;
  }
  const std::vector<envs::ActionSpec>& actions() const override { return actions_; }
  int default_action() const override { return 0; }
  const envs::ActionTextRules& text_rules() const override { return rules_; }
  int max_steps() const override { return 3 + static_cast<int>(seed_ % 4); }
  std::string instruction_prompt() const override { return "Count. Seed " + std::to_string(seed_) + "."; }
  envs::TextObservation observe_text() const override { return {"step " + std::to_string(steps_), ""}; }
  std::string render_ascii() const override { return std::to_string(steps_); }
  double progression() const override { return 0.0; }
  /** The step count is this env's whole state (it decides when "finish" ends the episode). */
  std::string serialize_state() const override { return std::to_string(seed_) + "/" + std::to_string(steps_); }

 private:
  std::string id_ = "test/counting";
  std::vector<envs::ActionSpec> actions_ = {{"wait", "do nothing"}, {"finish", "end on an even step"}};
  envs::ActionTextRules rules_;
  uint64_t seed_ = 0;
  int steps_ = 0;
  bool started_ = false;
};

}  // namespace turnrl::test
