#pragma once
// The one reply parser: turns a free-text reply into an action the way BALROG and Verlog do, says
// where the action text starts (so the learner can tell reasoning tokens from action tokens), and
// decides what of the reply enters the history. Train, eval and play all parse through here.
#include <cstddef>
#include <map>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "envs/env.h"

namespace turnrl::envs {

enum class ReplyFormat {
  kBalrogNaive,  // Python strip, keep ASCII letters/whitespace/colons, exact match (BALROG's naive agent)
  kActionTag,    // text after the last "ACTION:" (Verlog), normalised, translated, matched
};

/** What the assistant turn of the history shows (verlog.md 4.4). */
enum class HistoryEntry {
  kRawReply,           // the reply as written (BALROG: its letter-filtered text; Verlog BabyAI/BabaIsAI)
  kExecutedAction,     // only the executed action name
  kReplyWithExecuted,  // text before the action marker + "\nACTION: <executed>.\n" (Verlog Crafter)
};

/** Extra synonyms (normalised reply -> action names), consulted after the env's own. */
using Synonyms = std::map<std::string, std::vector<std::string>>;

struct ParsedReply {
  int action = 0;          // the action to execute (the default when invalid)
  bool valid = false;      // the reply named an action (directly or through a translation)
  std::string candidate;   // the normalised text that was matched
  /** Byte offset in the reply where the action text begins: just after the last action marker,
   *  or 0 when the whole reply is the action (BALROG's naive format, or no marker). */
  size_t action_begin = 0;
  /** Whether the reply has an action marker, and where the marker itself begins. */
  bool has_marker = false;
  size_t marker_begin = 0;
};

/** Parses `reply` for `env`. `rng` decides between several translations of one synonym. */
ParsedReply parse_reply(std::string_view reply, const Env& env, ReplyFormat format, std::mt19937_64& rng,
                        const Synonyms& extra_synonyms = {});

/** The history's assistant text for a parsed reply (empty when BALROG's filter left nothing). */
std::string history_entry_text(std::string_view reply, const ParsedReply& parsed, const std::string& executed_action,
                               HistoryEntry entry, ReplyFormat format);

/** BALROG's prefix to the next long-term observation after an invalid reply. */
std::string invalid_action_feedback(const std::string& default_action_name);

}  // namespace turnrl::envs
