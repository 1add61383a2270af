#pragma once
// One environment slot: the env, its episode memory, and the turn logic shared by training
// rollouts, evaluation and play (parse the reply, substitute the default action, penalise invalid
// replies, step, feed the memory), all decided by one TurnSettings.
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "envs/env.h"
#include "envs/reply_parser.h"
#include "memory/history.h"
#include "trainer/rollout/turn_settings.h"

namespace turnrl::trainer {

struct TurnOutcome {
  int action = 0;
  bool valid = false;
  std::string candidate;    // normalised reply text that was matched
  size_t action_begin = 0;  // byte offset of the action text in the reply (envs::ParsedReply)
  double env_reward = 0.0;
  double reward = 0.0;      // after the invalid-action penalty and binarisation
  bool terminated = false, truncated = false;
  bool done() const { return terminated || truncated; }
};

class EnvSlot {
 public:
  /** `agent_prompt_limit`: the agent's longest prompt in tokens (0: none); the memory fits it. */
  EnvSlot(std::unique_ptr<envs::Env> env, const TurnSettings& settings, uint64_t rng_seed, size_t agent_prompt_limit = 0);

  void begin_episode(uint64_t seed);
  /** Parses `reply`, steps the env and updates the memory; throws std::logic_error after done. */
  TurnOutcome apply(const std::string& reply);
  /** A turn the agent could not answer (its request failed): plays the env's default action, with
   *  no invalid-reply penalty, and ends the episode there (truncated unless the step terminated it). */
  TurnOutcome end_with_default();
  /** Rebuilds an episode in flight from its seed and replies (episode_replies()): the same env,
   *  memory and translation choices, since every episode reseeds the slot's choice stream. */
  void replay(uint64_t seed, const std::vector<std::string>& replies);
  const std::vector<std::string>& episode_replies() const { return replies_; }
  std::vector<memory::ChatMessage> prompt(const memory::TokenCounter& count) const { return history_.messages(count); }

  envs::Env& env() { return *env_; }
  const envs::Env& env() const { return *env_; }
  /** The turn limit of the episode in flight (the settings' cap or the env's own). */
  int turn_limit() const;
  uint64_t episode_seed() const { return seed_; }
  int turn() const { return turn_; }
  double episode_return() const { return return_; }
  bool done() const { return done_; }

 private:
  std::string instruction() const;
  /** Steps `parsed.action` for `reply` and feeds the memory; an invalid reply earns the penalty
   *  when `penalise_invalid`. */
  TurnOutcome play(const std::string& reply, const envs::ParsedReply& parsed, bool penalise_invalid);

  std::unique_ptr<envs::Env> env_;
  TurnSettings settings_;
  envs::HistoryEntry history_entry_;
  memory::History history_;
  uint64_t rng_seed_;
  std::mt19937_64 rng_;  // translation choices (e.g. Crafter's diagonal moves), reseeded per episode
  uint64_t seed_ = 0;
  std::vector<std::string> replies_;  // of the episode in flight
  int turn_ = 0;
  double return_ = 0.0;
  bool done_ = true;
};

}  // namespace turnrl::trainer
