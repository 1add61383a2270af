#pragma once
// A BabaIsAI level as BALROG runs it: the original env behind BALROG's BabaIsAIWrapper and
// gym-compatibility wrapper (text observation, progression, and the mid-episode level reset).
#include <string>
#include <vector>

#include "envs/babaisai/levels.h"
#include "envs/babaisai/rule_changes.h"
#include "envs/babaisai/world.h"
#include "envs/common/numpy_random.h"
#include "envs/env.h"

namespace turnrl::envs::babaisai {

/** What BALROG's wrapper puts in front of the text when it had to reset the level. */
inline constexpr std::string_view kResetNotice = "[...] IS YOU rule was broken, environment reset";

class BabaIsAIEnv final : public Env {
 public:
  /** `rule_change_reward` (in percent of a win's 1.0) is added to a step's reward for each rule
   *  change new to the episode (RuleChanges); 0 keeps BALROG's reward. A step that reset the
   *  level pays none. */
  BabaIsAIEnv(std::string id, LevelConfig config, int max_steps = 100, int rule_change_reward = 0);

  const std::string& id() const override { return id_; }
  /** BALROG seeds numpy's global generator with the episode seed, which must fit 32 bits. */
  void reset(uint64_t seed) override;
  StepResult step(int action) override;
  const std::vector<ActionSpec>& actions() const override { return action_list(); }
  /** The family's actions, known without building an env. */
  static const std::vector<ActionSpec>& action_list();
  int default_action() const override { return kIdle; }
  const ActionTextRules& text_rules() const override;
  int max_steps() const override { return max_steps_; }
  std::string instruction_prompt() const override;
  TextObservation observe_text() const override;
  std::string render_ascii() const override;
  double progression() const override { return progression_; }
  /** Every cell's stack by object content (pool ids left out: they only name objects), the text's
   *  "you" position, a level reset's notice, the level plan and the progression. The active rules
   *  are read off the grid, and the world's agent position/direction feed nothing, so both are out.
   *  With a rule-change reward, the changes already paid are in too. */
  std::string serialize_state() const override;

  const World& world() const { return world_; }
  const std::string& target_plan() const { return target_plan_; }
  /** Whether the last step left no "you" object, so that (as BALROG's wrapper does) a new level
   *  was generated from the continuing random stream and the episode went on in it. */
  bool last_step_reset_level() const { return level_was_reset_; }
  /** Records the generator calls of the next resets (for golden comparison); nullptr stops it. */
  void set_rng_trace(std::vector<RngCall>* trace) { trace_ = trace; }

 private:
  void require_reset() const;
  void generate();

  std::string id_;
  LevelConfig config_;
  int max_steps_;
  double rule_change_reward_;
  RuleChanges rule_changes_;
  RandomState random_;
  World world_;
  std::string target_plan_;
  double progression_ = 0.0;
  bool has_reset_ = false;
  bool level_was_reset_ = false;
  Pos you_pos_;  // BALROG's reference position for the text
  std::string rules_before_reset_;
  std::vector<RngCall>* trace_ = nullptr;
};

}  // namespace turnrl::envs::babaisai
