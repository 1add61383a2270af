#pragma once
// The sliding window of the last turns of an episode, assembled into the chat prompt in BALROG's
// or Verlog's layout, within an optional token budget.
#include <cstddef>
#include <deque>
#include <functional>
#include <string>
#include <vector>

#include "envs/env.h"
#include "memory/chat_message.h"

namespace turnrl::memory {

enum class PromptLayout {
  kBalrog,  // instruction as the first user message; window of 2n events (balrog.md 1.2)
  kVerlog,  // instruction as the system message; window of 2n+1 events, "Previous plan:" (verlog.md 3)
  /** BALROG's instruction, then every turn of the episode as written: each prompt extends the
   *  previous one (no window, no re-labelling; the suffix ends every observation). */
  kTranscript,
};

/** BALROG's naive-agent suffix, appended to the last user message after a blank line. */
extern const char* const kBalrogNaiveSuffix;
/** Verlog's THINK/ACTION format instruction (cot captioner); `action_list` is non-empty only for
 *  BabaIsAI, whose last line lists the actions. */
std::string verlog_format_instruction(const std::string& action_list = "");

/** Counts the tokens of a rendered prompt; memory stays independent of any tokenizer. */
using TokenCounter = std::function<size_t(const std::vector<ChatMessage>&)>;

struct HistoryConfig {
  PromptLayout layout = PromptLayout::kBalrog;
  /** n: previous turns (observation + reply) kept; BALROG 16, Verlog 1. */
  int max_turns = 16;
  /** Verlog: how many of the newest replies are shown in full as "Previous plan:"; older ones
   *  show only the executed action. Ignored by the BALROG layout (always the stored reply). */
  int max_reasoning_turns = 1;
  /** Appended to the last user message after "\n\n"; empty: nothing. */
  std::string suffix = kBalrogNaiveSuffix;
  /** 0: no budget. Otherwise the oldest turns are dropped (whole turns, never part of one)
   *  until the prompt fits; the instruction and the current observation always stay. */
  size_t token_budget = 0;
  /** Leave a reply whose history text is empty out of the window (BALROG's `if prev_action`). */
  bool skip_empty_replies = false;
};

/** One episode's memory. Events alternate: observation, reply, observation, ... */
class History {
 public:
  explicit History(HistoryConfig config);

  /** Starts an episode: clears the window and sets the instruction prompt. */
  void reset(std::string instruction);
  /** Crafter's instruction changes during the episode (remaining achievements). */
  void set_instruction(std::string instruction) { instruction_ = std::move(instruction); }
  /** `observation.long_term` already carries any invalid-action feedback prefix. */
  void add_observation(envs::TextObservation observation);
  /** `reply` is what the chosen history policy shows (raw reply or with the executed action);
   *  `executed_action` is shown instead once the reply leaves the Verlog reasoning window. */
  void add_reply(std::string reply, std::string executed_action);

  /** The chat messages for the current turn; `count` enforces the token budget. */
  std::vector<ChatMessage> messages(const TokenCounter& count = nullptr) const;

  const HistoryConfig& config() const { return config_; }
  size_t event_count() const { return events_.size(); }

 private:
  struct Event {
    bool is_observation = true;
    envs::TextObservation observation;
    std::string reply, executed_action;
  };
  std::vector<ChatMessage> render(size_t first_event) const;
  std::vector<ChatMessage> render_transcript(size_t first_event) const;
  size_t capacity() const;

  HistoryConfig config_;
  std::string instruction_;
  std::deque<Event> events_;
};

}  // namespace turnrl::memory
