#pragma once
// BabyAI-MixedTrainLocal-v0 sub-tasks as BALROG runs them, with BALROG's text layer.
#include <string>
#include <vector>

#include "envs/babyai/level.h"
#include "envs/env.h"

namespace turnrl::envs::babyai {

/** The sub-task names as the original level stores them ("pick up seq go to" has spaces). */
std::string_view task_name(Task task);

class BabyAIEnv final : public Env {
 public:
  BabyAIEnv(std::string id, Task task, int num_dists);

  const std::string& id() const override { return id_; }
  void reset(uint64_t seed) override;
  StepResult step(int action) override;
  const std::vector<ActionSpec>& actions() const override { return action_list(); }
  /** The family's actions, known without building an env. */
  static const std::vector<ActionSpec>& action_list();
  int default_action() const override { return kForward; }
  const ActionTextRules& text_rules() const override;
  int max_steps() const override { return level_.world.max_steps; }
  std::string goal() const override { return level_.mission; }
  std::string instruction_prompt() const override;
  TextObservation observe_text() const override;
  std::string render_ascii() const override;
  double progression() const override { return succeeded_ ? 1.0 : 0.0; }
  /** Grid (cells as object indices), every object, agent, carried object, mission, verifier state;
   *  objects keep their generation index, which the verifier tracks them by. */
  std::string serialize_state() const override;

  Task task() const { return task_; }
  const Level& level() const { return level_; }
  /** Records the generator calls of the next resets (for golden comparison). */
  void set_rng_trace(std::vector<RngCall>* trace) { trace_ = trace; }

 private:
  void require_reset() const;

  std::string id_;
  Task task_;
  LevelGenerator generator_;
  Level level_;
  bool has_reset_ = false;
  bool succeeded_ = false;
  std::vector<RngCall>* trace_ = nullptr;
};

}  // namespace turnrl::envs::babyai
