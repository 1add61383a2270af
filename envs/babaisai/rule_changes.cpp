#include "envs/babaisai/rule_changes.h"

namespace turnrl::envs::babaisai {
namespace {

int rule_key(const Rule& rule) {
  const int right = rule.replacement ? kNumProperties + static_cast<int>(rule.object2) : static_cast<int>(rule.property);
  return static_cast<int>(rule.object) * (kNumProperties + kNumThings) + right;
}

std::set<int> rule_keys(const Ruleset& rules) {
  std::set<int> keys;
  for (const Rule& rule : rules.rules()) keys.insert(rule_key(rule));
  return keys;
}

}  // namespace

void RuleChanges::start_level(const Ruleset& rules) { level_start_ = rule_keys(rules); }

int RuleChanges::count_new(const Ruleset& rules) {
  const std::set<int> now = rule_keys(rules);
  int added = 0;
  for (int key : now) {
    if (!level_start_.contains(key)) added += counted_.insert(key).second;
  }
  for (int key : level_start_) {
    if (!now.contains(key)) added += counted_.insert(-1 - key).second;
  }
  return added;
}

void RuleChanges::write(StateWriter& out) const {
  for (const std::set<int>* keys : {&level_start_, &counted_}) {
    out.put(static_cast<int>(keys->size()));
    for (int key : *keys) out.put(key);
  }
}

}  // namespace turnrl::envs::babaisai
