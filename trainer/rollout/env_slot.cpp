#include "trainer/rollout/env_slot.h"

#include <algorithm>
#include <stdexcept>

namespace turnrl::trainer {

EnvSlot::EnvSlot(std::unique_ptr<envs::Env> env, const TurnSettings& settings, uint64_t rng_seed, size_t agent_prompt_limit)
    : env_(std::move(env)),
      settings_(settings),
      history_entry_(env_ ? settings.history_entry_for(env_->id()) : envs::HistoryEntry::kRawReply),
      history_(settings.history_config(agent_prompt_limit)),
      rng_seed_(rng_seed) {
  if (!env_) throw std::invalid_argument("EnvSlot: null env");
  if (settings_.max_turns < 0) throw std::invalid_argument("turn.max_turns must be >= 0");
}

std::string EnvSlot::instruction() const {
  return settings_.goal_as_instruction() ? env_->goal() : env_->instruction_prompt();
}

int EnvSlot::turn_limit() const {
  return settings_.max_turns > 0 ? std::min(settings_.max_turns, env_->max_steps()) : env_->max_steps();
}

void EnvSlot::begin_episode(uint64_t seed) {
  seed_ = seed;
  rng_.seed(rng_seed_ ^ (seed * 0x9E3779B97F4A7C15ULL));
  replies_.clear();
  env_->reset(seed);
  turn_ = 0;
  return_ = 0.0;
  done_ = false;
  history_.reset(instruction());
  history_.add_observation(env_->observe_text());
}

void EnvSlot::replay(uint64_t seed, const std::vector<std::string>& replies) {
  begin_episode(seed);
  for (const std::string& reply : replies) {
    if (done_) throw std::invalid_argument("EnvSlot::replay: the episode of seed " + std::to_string(seed) + " ends before its last reply");
    apply(reply);
  }
}

TurnOutcome EnvSlot::apply(const std::string& reply) {
  if (done_) throw std::logic_error("EnvSlot::apply: the episode is over; call begin_episode");
  return play(reply, envs::parse_reply(reply, *env_, settings_.reply_format, rng_, settings_.synonyms), true);
}

TurnOutcome EnvSlot::end_with_default() {
  if (done_) throw std::logic_error("EnvSlot::end_with_default: the episode is over; call begin_episode");
  envs::ParsedReply parsed;
  parsed.action = env_->default_action();
  TurnOutcome outcome = play("", parsed, false);
  outcome.truncated = !outcome.terminated;
  done_ = true;
  return outcome;
}

TurnOutcome EnvSlot::play(const std::string& reply, const envs::ParsedReply& parsed, bool penalise_invalid) {
  TurnOutcome outcome;
  outcome.action = parsed.action;
  outcome.valid = parsed.valid;
  outcome.candidate = parsed.candidate;
  outcome.action_begin = parsed.action_begin;
  const envs::StepResult step = env_->step(parsed.action);
  ++turn_;
  replies_.push_back(reply);
  outcome.env_reward = step.reward;
  const double reward = settings_.binary_reward && step.terminated && step.reward > 0 ? 1.0 : step.reward;
  outcome.reward = parsed.valid || !penalise_invalid ? reward : settings_.invalid_penalty;
  outcome.terminated = step.terminated;
  outcome.truncated = !step.terminated && (step.truncated || turn_ >= turn_limit());
  return_ += outcome.reward;
  done_ = outcome.done();

  const std::string& executed = env_->actions()[parsed.action].name;
  history_.add_reply(envs::history_entry_text(reply, parsed, executed, history_entry_, settings_.reply_format), executed);
  history_.set_instruction(instruction());
  envs::TextObservation observation = env_->observe_text();
  if (!parsed.valid && settings_.invalid_feedback) {
    observation.long_term = envs::invalid_action_feedback(executed) + observation.long_term;
  }
  history_.add_observation(std::move(observation));
  return outcome;
}

}  // namespace turnrl::trainer
