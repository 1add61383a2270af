#pragma once
// corridor/*: the skeleton env, a small complete example of the Env API (docs/new_env.md walks
// through it). The agent stands in a corridor of `length` cells and must reach the exit at one end
// within 2 x length turns. The seed draws the exit's side and the start cell (std::mt19937_64, in
// that order). Reward 1 when the agent steps onto the exit (terminated), 0 otherwise; the turn
// limit truncates. Progression: 1 on reaching the exit.
//   corridor/short: length 5;   corridor/long: length 9 (option `length` overrides).
#include <cstdint>
#include <string>
#include <vector>

#include "envs/env.h"

namespace turnrl::envs::corridor {

class CorridorEnv final : public Env {
 public:
  CorridorEnv(std::string id, int length);
  /** "go left", "go right", "wait": the family lists them without building an env. */
  static const std::vector<ActionSpec>& action_list();

  const std::string& id() const override { return id_; }
  void reset(uint64_t seed) override;
  StepResult step(int action) override;
  const std::vector<ActionSpec>& actions() const override { return action_list(); }
  int default_action() const override { return 2; }  // wait
  const ActionTextRules& text_rules() const override;
  int max_steps() const override { return 2 * length_; }
  std::string goal() const override;
  std::string instruction_prompt() const override;
  TextObservation observe_text() const override;
  std::string render_ascii() const override;
  double progression() const override { return reached_ ? 1.0 : 0.0; }
  /** Length, exit side, position and whether the exit was reached (the step counter left out). */
  std::string serialize_state() const override;

 private:
  void require_reset() const;

  std::string id_;
  int length_;
  bool exit_on_right_ = true;
  int position_ = 0;
  int steps_ = 0;
  bool reached_ = false;
  bool has_reset_ = false;
};

}  // namespace turnrl::envs::corridor
