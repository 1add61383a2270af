#include "trainer/env_slot.h"

#include <stdexcept>

namespace turnrl::trainer {

memory::HistoryConfig fit_history_to_agent(memory::HistoryConfig history, const agents::Agent& agent) {
  const size_t limit = agent.max_prompt_tokens();
  if (limit > 0 && (history.token_budget == 0 || history.token_budget > limit)) history.token_budget = limit;
  return history;
}

HistoryEntry default_history_entry(const std::string& env_id) {
  return env_id.rfind("crafter", 0) == 0 ? HistoryEntry::kReplyWithExecuted : HistoryEntry::kRawReply;
}

EnvSlot::EnvSlot(std::unique_ptr<envs::Env> env, memory::HistoryConfig history, ActionConfig actions, uint64_t rng_seed)
    : env_(std::move(env)), history_(std::move(history)), actions_(std::move(actions)), rng_seed_(rng_seed) {
  if (!env_) throw std::invalid_argument("EnvSlot: null env");
  if (actions_.max_turns < 0) throw std::invalid_argument("max_turns must be >= 0");
}

std::string EnvSlot::instruction() const {
  return actions_.goal_as_instruction ? env_->goal() : env_->instruction_prompt();
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

std::string EnvSlot::history_text(const std::string& reply, const envs::ParsedAction& parsed) const {
  const std::string& executed = env_->actions()[parsed.action].name;
  switch (actions_.history_entry) {
    case HistoryEntry::kRawReply:
      // BALROG's naive agent stores its letter-filtered completion.
      return actions_.reply_format == envs::ReplyFormat::kBalrogNaive ? parsed.candidate : reply;
    case HistoryEntry::kExecutedAction:
      return executed;
    case HistoryEntry::kReplyWithExecuted: {
      const size_t marker = reply.find("ACTION:");
      return reply.substr(0, marker) + "\nACTION: " + executed + ".\n";
    }
  }
  return reply;
}

TurnOutcome EnvSlot::apply(const std::string& reply) {
  if (done_) throw std::logic_error("EnvSlot::apply: the episode is over; call begin_episode");
  envs::ParsedAction parsed = envs::parse_action(reply, *env_, actions_.reply_format, rng_);
  if (!parsed.valid) {
    if (const auto found = actions_.translations.find(parsed.candidate); found != actions_.translations.end() && !found->second.empty()) {
      const auto& options = found->second;
      const std::string& name = options[std::uniform_int_distribution<size_t>(0, options.size() - 1)(rng_)];
      for (int i = 0; i < env_->num_actions(); ++i) {
        if (env_->actions()[i].name == name) {
          parsed.action = i;
          parsed.valid = true;
          break;
        }
      }
    }
  }
  TurnOutcome outcome;
  outcome.action = parsed.action;
  outcome.valid = parsed.valid;
  outcome.candidate = parsed.candidate;
  const envs::StepResult step = env_->step(parsed.action);
  ++turn_;
  replies_.push_back(reply);
  outcome.env_reward = step.reward;
  const double reward = actions_.binary_reward && step.reward > 0 ? 1.0 : step.reward;
  outcome.reward = parsed.valid ? reward : actions_.invalid_action_penalty;
  outcome.terminated = step.terminated;
  const int limit = actions_.max_turns > 0 ? std::min(actions_.max_turns, env_->max_steps()) : env_->max_steps();
  outcome.truncated = !step.terminated && (step.truncated || turn_ >= limit);
  return_ += outcome.reward;
  done_ = outcome.done();

  history_.add_reply(history_text(reply, parsed), env_->actions()[parsed.action].name);
  history_.set_instruction(instruction());
  envs::TextObservation observation = env_->observe_text();
  if (!parsed.valid && actions_.feedback_on_invalid_action) {
    observation.long_term = envs::invalid_action_feedback(env_->actions()[parsed.action].name) + observation.long_term;
  }
  history_.add_observation(std::move(observation));
  return outcome;
}

}  // namespace turnrl::trainer
