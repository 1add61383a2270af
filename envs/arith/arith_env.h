#pragma once
// arith/*: multi-step integer problems with one numeric answer, for single-turn and multi-turn
// training on a task whose correctness is cheap to check.
//
// Actions are the answers themselves: action k is named "k" (k = 0..max_value), so a reply ending in
// "ACTION: 32" answers 32 through the usual parser. Every result is at least 1, so the default action
// "0", which an unparseable reply executes, is never correct.
//
// - single: the observation states the whole problem; one reply answers it; reward 1 if the answer
//   is the final result, else 0; the episode ends after that reply (max_steps 1).
// - multi: one operation per turn. The observation states the problem, the results confirmed so far
//   and asks for the result of the next operation. A correct intermediate result is confirmed and the
//   next operation is asked for; a wrong one is reported (without its value) and the same operation
//   is asked again. Reward 1 when the final result is given (the episode terminates), 0 on every
//   other turn; max_steps = 2 * steps (one retry per operation on average), then truncation.
//   Progression: the share of operations solved.
#include <string>
#include <vector>

#include "envs/arith/problem.h"
#include "envs/env.h"

namespace turnrl::envs::arith {

enum class Mode { kSingle, kMulti };

class ArithEnv final : public Env {
 public:
  ArithEnv(std::string id, Mode mode, int steps, int max_value);
  /** The actions "0" .. max_value (the family lists them without building an env). */
  static std::vector<ActionSpec> answer_actions(int max_value);

  const std::string& id() const override { return id_; }
  void reset(uint64_t seed) override;
  /** Throws std::logic_error once the episode has ended. */
  StepResult step(int action) override;
  const std::vector<ActionSpec>& actions() const override { return actions_; }
  int default_action() const override { return 0; }
  const ActionTextRules& text_rules() const override;
  int max_steps() const override { return mode_ == Mode::kSingle ? 1 : 2 * steps_; }
  std::string goal() const override;
  std::string instruction_prompt() const override;
  TextObservation observe_text() const override;
  std::string render_ascii() const override;
  double progression() const override;
  /** The next correct answer (correct_answers()'s first), as text; empty once the episode is over. */
  std::string reference_answer() const override;
  /** The problem, the operations solved, whether the last answer was wrong, whether it is over. */
  std::string serialize_state() const override;

  const Problem& problem() const { return problem_; }
  /** The answers that solve the current episode from here, one per remaining turn. */
  std::vector<int> correct_answers() const;

 private:
  void require_reset() const;

  std::string id_;
  Mode mode_;
  int steps_;
  int max_value_;
  std::vector<ActionSpec> actions_;
  Problem problem_;
  int solved_ = 0;  // operations whose result was given (multi); 0 or steps_ (single)
  int turns_ = 0;
  bool last_answer_wrong_ = false;
  bool finished_ = false;  // terminated
  bool has_reset_ = false;
};

}  // namespace turnrl::envs::arith
