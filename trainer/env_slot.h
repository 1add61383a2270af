#pragma once
// One environment slot of a rollout: the env, its episode memory, and the turn logic shared by
// training rollouts and evaluation (parse the reply, substitute the default action, penalise
// invalid replies, step, feed the memory).
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "agents/agent.h"
#include "envs/action_parser.h"
#include "envs/env.h"
#include "memory/history.h"

namespace turnrl::trainer {

/** What the assistant turn of the history shows (verlog.md 4.4). */
enum class HistoryEntry {
  kRawReply,             // the reply as written (BALROG; Verlog BabyAI/BabaIsAI)
  kExecutedAction,       // only the executed action name
  kReplyWithExecuted,    // text before "ACTION:" + "\nACTION: <executed>.\n" (Verlog Crafter)
};

struct ActionConfig {
  envs::ReplyFormat reply_format = envs::ReplyFormat::kActionTag;
  /** Reward that replaces the step reward after an invalid reply (Verlog: -0.1). */
  double invalid_action_penalty = -0.1;
  HistoryEntry history_entry = HistoryEntry::kRawReply;
  /** BALROG: prefix the next observation with a note that the default action ran. */
  bool feedback_on_invalid_action = false;
  /** Extra synonyms (normalised reply -> action names), consulted when the env's own rules fail. */
  std::map<std::string, std::vector<std::string>> translations;
  /** Per-episode turn cap below the env's own (0: the env's max_steps()). */
  int max_turns = 0;
  /** A positive step reward counts as 1 (success), as the tiny recipe trains BabyAI. */
  bool binary_reward = false;
  /** The env's goal line stands in for the instruction prompt (compact prompts for tiny models). */
  bool goal_as_instruction = false;
};

/** `history` with its token budget lowered to what the agent accepts (see Agent::max_prompt_tokens). */
memory::HistoryConfig fit_history_to_agent(memory::HistoryConfig history, const agents::Agent& agent);

/** Verlog's per-family default for what enters the history. */
HistoryEntry default_history_entry(const std::string& env_id);

struct TurnOutcome {
  int action = 0;
  bool valid = false;
  std::string candidate;  // normalised reply text that was matched
  double env_reward = 0.0;
  double reward = 0.0;    // after the invalid-action penalty
  bool terminated = false, truncated = false;
  bool done() const { return terminated || truncated; }
};

class EnvSlot {
 public:
  EnvSlot(std::unique_ptr<envs::Env> env, memory::HistoryConfig history, ActionConfig actions, uint64_t rng_seed);

  void begin_episode(uint64_t seed);
  /** Parses `reply`, steps the env and updates the memory; throws std::logic_error after done. */
  TurnOutcome apply(const std::string& reply);
  /** Rebuilds an episode in flight from its seed and replies (episode_replies()): the same env,
   *  memory and translation choices, since every episode reseeds the slot's choice stream. */
  void replay(uint64_t seed, const std::vector<std::string>& replies);
  const std::vector<std::string>& episode_replies() const { return replies_; }
  std::vector<memory::ChatMessage> prompt(const memory::TokenCounter& count) const { return history_.messages(count); }

  envs::Env& env() { return *env_; }
  const envs::Env& env() const { return *env_; }
  uint64_t episode_seed() const { return seed_; }
  int turn() const { return turn_; }
  double episode_return() const { return return_; }
  bool done() const { return done_; }

 private:
  std::string history_text(const std::string& reply, const envs::ParsedAction& parsed) const;
  std::string instruction() const;

  std::unique_ptr<envs::Env> env_;
  memory::History history_;
  ActionConfig actions_;
  uint64_t rng_seed_;
  std::mt19937_64 rng_;  // translation choices (e.g. Crafter's diagonal moves), reseeded per episode
  uint64_t seed_ = 0;
  std::vector<std::string> replies_;  // of the episode in flight
  int turn_ = 0;
  double return_ = 0.0;
  bool done_ = true;
};

}  // namespace turnrl::trainer
