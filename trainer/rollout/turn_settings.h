#pragma once
// Everything one turn needs besides the env and the agent: how the prompt is laid out, how much
// history it shows, how a reply is parsed and what of it is remembered, how invalid replies and
// rewards are treated, when an episode is cut. One YAML section (`turn:`) and one reader serve
// `train`, `eval` and `play`, so what a model sees in play is what it saw in training.
#include <string>

#include <yaml-cpp/yaml.h>

#include "envs/reply_parser.h"
#include "memory/history.h"
#include "trainer/config/config_schema.h"

namespace turnrl::trainer {

enum class TurnLayout {
  kBalrog,   // instruction as the first user message, BALROG's window (balrog.md 1.2)
  kVerlog,   // instruction as the system message, "Previous plan:" (verlog.md 3)
  kCompact,  // BALROG's window with the env's goal line as the instruction (tiny models)
  kTranscript,  // BALROG's instruction, then the whole episode: each prompt extends the last (`history` unused)
};

/** Appended to the last user message: the layout's (BALROG's naive-agent line, Verlog's THINK/ACTION
 *  format, nothing for compact), nothing, or one of them by name. */
enum class TurnSuffix { kAuto, kNone, kBalrogNaive, kVerlogCot };

struct TurnSettings {
  TurnLayout layout = TurnLayout::kBalrog;
  /** n: previous turns (observation + reply) kept in the prompt; BALROG 16, Verlog 1. */
  int history = 16;
  /** 0: none; else the oldest turns are dropped until the prompt fits (agents with a tokenizer). */
  int token_budget = 0;
  TurnSuffix suffix = TurnSuffix::kAuto;
  envs::ReplyFormat reply_format = envs::ReplyFormat::kBalrogNaive;
  envs::HistoryEntry history_entry = envs::HistoryEntry::kRawReply;
  /** Use the env family's Verlog default for history_entry instead (`history_entry: family`). */
  bool family_history_entry = false;
  /** Reward that replaces the step reward after an invalid reply (BALROG 0, Verlog -0.1). */
  double invalid_penalty = 0.0;
  /** BALROG: prefix the next observation with a note that the default action ran. */
  bool invalid_feedback = true;
  /** A positive step reward counts as 1 (success), as the tiny recipe trains BabyAI. */
  bool binary_reward = false;
  /** Per-episode turn cap below the env's own (0: the env's limit). */
  int max_turns = 0;
  /** Extra synonyms (normalised reply -> action names), consulted when the env's own rules fail. */
  envs::Synonyms synonyms;

  /** The memory window these settings give; `agent_prompt_limit` (0: none) caps the token budget. */
  memory::HistoryConfig history_config(size_t agent_prompt_limit = 0) const;
  /** What enters the history for env `env_id` (resolves `family`). */
  envs::HistoryEntry history_entry_for(const std::string& env_id) const;
  /** The env's goal line stands in for the instruction prompt. */
  bool goal_as_instruction() const { return layout == TurnLayout::kCompact; }
};

/** The keys of the `turn:` section (every key optional; defaults are BALROG's protocol). */
const Schema<TurnSettings>& turn_keys();
/** Reads the `turn:` section. */
TurnSettings read_turn_settings(ConfigSection section);

template <>
struct EnumNames<TurnLayout> {
  static const std::vector<std::string>& names() {
    static const std::vector<std::string> n = {"balrog", "verlog", "compact", "transcript"};
    return n;
  }
};
template <>
struct EnumNames<TurnSuffix> {
  static const std::vector<std::string>& names() {
    static const std::vector<std::string> n = {"auto", "none", "balrog-naive", "verlog-cot"};
    return n;
  }
};
template <>
struct EnumNames<envs::ReplyFormat> {
  static const std::vector<std::string>& names() {
    static const std::vector<std::string> n = {"balrog", "action-tag"};
    return n;
  }
};
/** `history_entry` also takes `family` (TurnSettings::family_history_entry). */
template <>
struct EnumNames<envs::HistoryEntry> {
  static const std::vector<std::string>& names() {
    static const std::vector<std::string> n = {"raw", "action", "reply-with-action"};
    return n;
  }
};

}  // namespace turnrl::trainer
