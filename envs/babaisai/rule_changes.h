#pragma once
// Counts the rule changes of an episode that were not seen before in it: a rule formed that the
// level did not start with, or a starting rule broken. It is a signal the env itself reports,
// which an optional reward term pays for (the `rule_change_reward` env option).
#include <set>

#include "envs/babaisai/rules.h"
#include "envs/common/state_writer.h"

namespace turnrl::envs::babaisai {

class RuleChanges {
 public:
  /** A new episode: every change may count once again. */
  void start_episode() { counted_.clear(); }
  /** A new level (also BALROG's reset after "you" was broken): its rules are the reference. */
  void start_level(const Ruleset& rules);
  /** How many changes of `rules` against the level's start this episode had not seen; they now count as seen. */
  int count_new(const Ruleset& rules);
  /** The level's start and the changes counted, which decide what a later change pays. */
  void write(StateWriter& out) const;

 private:
  std::set<int> level_start_;
  std::set<int> counted_;  // formed rules as their key, broken ones as -1 - key
};

}  // namespace turnrl::envs::babaisai
