#pragma once
// Turns a free-text reply into an action the way BALROG and Verlog do, with the feedback line
// BALROG prepends to the next observation when the reply was not a valid action.
#include <random>
#include <string>
#include <string_view>

#include "envs/env.h"

namespace turnrl::envs {

enum class ReplyFormat {
  kBalrogNaive,  // strip, keep letters/whitespace/colons, exact match (BALROG's naive agent)
  kActionTag,    // text after the last "ACTION:" (Verlog), normalised, translated, matched
};

struct ParsedAction {
  int action = 0;          // the action to execute (the default when invalid)
  bool valid = false;      // the reply named an action (directly or through a translation)
  std::string candidate;   // the normalised text that was matched
};

/** Parses `reply` for `env`. `rng` decides between several translations of one synonym. */
ParsedAction parse_action(std::string_view reply, const Env& env, ReplyFormat format, std::mt19937_64& rng);

/** BALROG's prefix to the next long-term observation after an invalid reply. */
std::string invalid_action_feedback(const std::string& default_action_name);

}  // namespace turnrl::envs
