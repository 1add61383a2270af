#include "envs/arith/arith_env.h"

#include <stdexcept>

#include "envs/common/state_writer.h"

namespace turnrl::envs::arith {

ArithEnv::ArithEnv(std::string id, Mode mode, int steps, int max_value)
    : id_(std::move(id)), mode_(mode), steps_(steps), max_value_(max_value), actions_(answer_actions(max_value)) {}

std::vector<ActionSpec> ArithEnv::answer_actions(int max_value) {
  std::vector<ActionSpec> actions;
  for (int answer = 0; answer <= max_value; ++answer) actions.push_back({std::to_string(answer), "answer " + std::to_string(answer)});
  return actions;
}

void ArithEnv::require_reset() const {
  if (!has_reset_) throw std::logic_error("env " + id_ + ": call reset() before stepping or observing");
}

void ArithEnv::reset(uint64_t seed) {
  problem_ = generate_problem(seed, steps_, max_value_);
  solved_ = 0;
  turns_ = 0;
  last_answer_wrong_ = false;
  finished_ = false;
  has_reset_ = true;
}

StepResult ArithEnv::step(int action) {
  check_action(action);
  require_reset();
  if (finished_ || turns_ >= max_steps()) throw std::logic_error("env " + id_ + ": the episode is over; reset first");
  ++turns_;
  StepResult result;
  if (mode_ == Mode::kSingle) {
    last_answer_wrong_ = action != problem_.answer();
    solved_ = last_answer_wrong_ ? 0 : steps_;
    finished_ = true;
  } else {
    last_answer_wrong_ = action != problem_.results[solved_];
    if (!last_answer_wrong_) ++solved_;
    finished_ = solved_ == steps_;
  }
  result.terminated = finished_;
  result.reward = finished_ && !last_answer_wrong_ ? 1.0 : 0.0;
  result.truncated = !finished_ && turns_ >= max_steps();
  return result;
}

const ActionTextRules& ArithEnv::text_rules() const {
  static const ActionTextRules kRules = [] {
    ActionTextRules rules;
    rules.cut_at_newline = true;             // "ACTION: 32\n..." answers 32
    rules.drop_trailing_punctuation = true;  // "ACTION: 32." too
    return rules;
  }();
  return kRules;
}

std::string ArithEnv::goal() const {
  require_reset();
  return problem_.statement();
}

std::string ArithEnv::instruction_prompt() const {
  require_reset();
  const std::string range = "a whole number from 0 to " + std::to_string(max_value_);
  const std::string rules =
      "Each operation applies to the result of the one before it, every result is a whole number, and divisions "
      "are exact.";
  if (mode_ == Mode::kSingle) {
    return "You are solving a multi-step arithmetic problem. " + rules +
           " Work out the final result and answer with it: your action is " + range + ".";
  }
  return "You are solving a multi-step arithmetic problem one operation at a time. " + rules +
         " Each turn, give the result after the operation you are asked about: your action is " + range +
         ". A correct result is confirmed and the next operation follows; after a wrong one the same operation is "
         "asked again. You have " + std::to_string(max_steps()) + " turns for " + std::to_string(steps_) +
         " operations.";
}

TextObservation ArithEnv::observe_text() const {
  require_reset();
  std::string text = "Problem: " + problem_.statement();
  if (mode_ == Mode::kSingle) {
    if (finished_) return {text + (last_answer_wrong_ ? "\nYour answer was wrong." : "\nYour answer was correct."), ""};
    return {text + "\nWhat is the final result?", ""};
  }
  text += "\nResults so far:";
  if (solved_ == 0) text += " none";
  for (int i = 0; i < solved_; ++i) text += (i ? ", " : " ") + std::to_string(problem_.results[i]);
  text += ".";
  if (last_answer_wrong_) text += "\nYour last answer was wrong.";
  if (finished_) return {text + "\nAll results are given.", ""};
  return {text + "\nWhat is the result after operation " + std::to_string(solved_ + 1) + " (" +
              problem_.operations[solved_].text() + ")?",
          ""};
}

std::string ArithEnv::render_ascii() const {
  require_reset();
  std::string out = problem_.statement() + "\nresults:";
  const int shown = mode_ == Mode::kSingle && finished_ ? steps_ : solved_;
  for (int i = 0; i < steps_; ++i) {
    out += ' ';
    out += i < shown ? std::to_string(problem_.results[i]) : std::string("_");
  }
  out += "\nanswer: " + std::to_string(problem_.answer()) + "; turn " + std::to_string(turns_) + "/" +
         std::to_string(max_steps());
  return out;
}

double ArithEnv::progression() const { return static_cast<double>(solved_) / steps_; }

std::string ArithEnv::reference_answer() const {
  const std::vector<int> answers = correct_answers();
  return answers.empty() ? std::string() : std::to_string(answers.front());
}

std::string ArithEnv::serialize_state() const {
  require_reset();
  StateWriter out;
  out.put(mode_);
  out.put(max_value_);
  out.put(problem_.start);
  out.put(problem_.operations.size());
  for (const Operation& operation : problem_.operations) {
    out.put(operation.op);
    out.put(operation.operand);
  }
  out.put(solved_);
  out.put(last_answer_wrong_);
  out.put(finished_);
  return out.take();
}

std::vector<int> ArithEnv::correct_answers() const {
  require_reset();
  if (finished_) return {};
  if (mode_ == Mode::kSingle) return {problem_.answer()};
  return {problem_.results.begin() + solved_, problem_.results.end()};
}

}  // namespace turnrl::envs::arith
