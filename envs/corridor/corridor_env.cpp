#include "envs/corridor/corridor_env.h"

#include <random>
#include <stdexcept>

#include "envs/common/state_writer.h"

namespace turnrl::envs::corridor {

CorridorEnv::CorridorEnv(std::string id, int length) : id_(std::move(id)), length_(length) {
  if (length_ < 2) throw std::invalid_argument("env " + id_ + ": length must be >= 2");
}

const std::vector<ActionSpec>& CorridorEnv::action_list() {
  static const std::vector<ActionSpec> kActions = {
      {"go left", "take one step to the left"}, {"go right", "take one step to the right"}, {"wait", "stay where you are"}};
  return kActions;
}

const ActionTextRules& CorridorEnv::text_rules() const {
  static const ActionTextRules kRules = [] {
    ActionTextRules rules;
    rules.translations = {{"left", {"go left"}}, {"right", {"go right"}}};
    return rules;
  }();
  return kRules;
}

void CorridorEnv::require_reset() const {
  if (!has_reset_) throw std::logic_error("env " + id_ + ": call reset() before stepping or observing");
}

void CorridorEnv::reset(uint64_t seed) {
  std::mt19937_64 rng(seed);
  exit_on_right_ = std::uniform_int_distribution<int>(0, 1)(rng) == 1;
  // Start anywhere but on the exit.
  const int exit = exit_on_right_ ? length_ - 1 : 0;
  do {
    position_ = std::uniform_int_distribution<int>(0, length_ - 1)(rng);
  } while (position_ == exit);
  steps_ = 0;
  reached_ = false;
  has_reset_ = true;
}

StepResult CorridorEnv::step(int action) {
  require_reset();
  check_action(action);
  if (reached_ || steps_ >= max_steps()) throw std::logic_error("env " + id_ + ": the episode is over; call reset()");
  ++steps_;
  if (action == 0 && position_ > 0) --position_;
  if (action == 1 && position_ < length_ - 1) ++position_;
  StepResult result;
  reached_ = position_ == (exit_on_right_ ? length_ - 1 : 0);
  result.reward = reached_ ? 1.0 : 0.0;
  result.terminated = reached_;
  result.truncated = !reached_ && steps_ >= max_steps();
  return result;
}

std::string CorridorEnv::goal() const { return "reach the exit"; }

std::string CorridorEnv::instruction_prompt() const {
  std::string text = "You are in a corridor. Your goal is to reach the exit.\n\nYou can take these actions:\n";
  for (const auto& action : actions()) text += action.name + ": " + action.description + "\n";
  return text + "\nIn a moment I will present you an observation. Tell me which action to take.";
}

TextObservation CorridorEnv::observe_text() const {
  require_reset();
  const int exit = exit_on_right_ ? length_ - 1 : 0;
  const int distance = exit > position_ ? exit - position_ : position_ - exit;
  TextObservation observation;
  if (reached_) {
    observation.long_term = "You are at the exit.";
  } else {
    observation.long_term = "The exit is " + std::to_string(distance) + (distance == 1 ? " step " : " steps ") +
                            (exit_on_right_ ? "to the right." : "to the left.");
  }
  return observation;
}

std::string CorridorEnv::render_ascii() const {
  require_reset();
  std::string row(static_cast<size_t>(length_), '.');
  row[exit_on_right_ ? length_ - 1 : 0] = 'E';
  row[position_] = 'A';
  return row;
}

std::string CorridorEnv::serialize_state() const {
  require_reset();
  StateWriter out;
  out.put(length_);
  out.put(exit_on_right_);
  out.put(position_);
  out.put(reached_);
  return out.take();
}

}  // namespace turnrl::envs::corridor
