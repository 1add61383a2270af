#pragma once
// The sliding window of the last n turns of an episode, assembled into chat messages in
// BALROG's, Verlog's or a compact layout, within a token budget.
#include <deque>
#include <functional>
#include <string>
#include <vector>

#include "envs/env.h"
#include "memory/chat_message.h"

namespace turnrl::memory {

enum class PromptFormat {
  kBalrog,   // instruction as the first user message, "Observation:" history, the naive agent's suffix
  kVerlog,   // instruction as the system message, "Current Observation:" + THINK/ACTION format request
  kCompact,  // one user message: the goal line and the observation (tiny models)
};

/** "balrog", "verlog", "compact"; throws std::invalid_argument otherwise. */
PromptFormat parse_prompt_format(const std::string& name);

/** Counts the tokens of a message list (the agent's tokenizer and chat template). */
using TokenCounter = std::function<size_t(const std::vector<ChatMessage>&)>;

class History {
 public:
  /** Keeps the last `max_turns` past (observation, reply) pairs besides the current observation. */
  History(PromptFormat format, int max_turns);

  /** Starts an episode. `goal` is the env's short goal (used by the compact layout). */
  void reset(std::string instruction, std::string goal);
  void observe(const envs::TextObservation& observation);
  /** The reply (raw or the executed action, as configured) that answered the current observation. */
  void reply(std::string text);

  /** The prompt for the current observation; drops the oldest turns while `count` exceeds `budget`. */
  std::vector<ChatMessage> messages(size_t budget = 0, const TokenCounter& count = nullptr) const;

 private:
  struct PastTurn {
    std::string observation;
    std::string reply;
  };
  std::vector<ChatMessage> render(size_t first_turn) const;

  PromptFormat format_;
  int max_turns_;
  std::string instruction_, goal_;
  std::deque<PastTurn> past_;
  envs::TextObservation current_;
  bool has_current_ = false;
};

}  // namespace turnrl::memory
