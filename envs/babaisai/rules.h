#pragma once
// Rules read from the rule blocks on the grid: "noun is property" and "noun is noun"
// (replacement), horizontally and vertically, in the original's discovery order.
#include <array>
#include <vector>

#include "envs/babaisai/grid.h"
#include "envs/babaisai/objects.h"

namespace turnrl::envs::babaisai {

struct Rule {
  Thing object = Thing::kBall;
  bool replacement = false;             // "object is object2" instead of "object is property"
  Property property = Property::kStop;  // when !replacement
  Thing object2 = Thing::kBall;         // when replacement
};

class Ruleset {
 public:
  /** Rules in discovery order (BALROG prints the property rules in this order). */
  const std::vector<Rule>& rules() const { return rules_; }
  bool holds(Thing type, Property property) const {
    return holds_[static_cast<int>(property)][static_cast<int>(type)];
  }
  void clear();
  void add(const Rule& rule);

 private:
  std::vector<Rule> rules_;
  std::array<std::array<bool, kNumThings>, kNumProperties> holds_{};
};

/**
 * Re-reads every rule: for each top-of-stack "is" block in row-major order, first the horizontal
 * reading (left, is, right), then the vertical one (up, is, down). Colour blocks do not exist in
 * BabaIsAI's BALROG levels, so the original's 4-block colour form never applies and is not read.
 */
void extract_rules(const Grid& grid, const std::vector<Object>& objects, Ruleset& out);

}  // namespace turnrl::envs::babaisai
