#include "envs/babaisai/rules.h"

namespace turnrl::envs::babaisai {
namespace {

/** Adds the rule formed by (subject, is, complement) if the block kinds make one. */
void maybe_add(ObjectId subject, ObjectId complement, const std::vector<Object>& objects, Ruleset& out) {
  if (subject == kNoObject || complement == kNoObject) return;
  const Object& s = objects[subject];
  const Object& c = objects[complement];
  if (s.kind != Kind::kRuleObject) return;
  if (c.kind == Kind::kRuleProperty) {
    out.add(Rule{s.thing, false, c.property, Thing::kBall});
  } else if (c.kind == Kind::kRuleObject) {
    out.add(Rule{s.thing, true, Property::kStop, c.thing});
  }
}

}  // namespace

void Ruleset::clear() {
  rules_.clear();
  holds_ = {};
}

void Ruleset::add(const Rule& rule) {
  rules_.push_back(rule);
  if (!rule.replacement) holds_[static_cast<int>(rule.property)][static_cast<int>(rule.object)] = true;
}

void extract_rules(const Grid& grid, const std::vector<Object>& objects, Ruleset& out) {
  out.clear();
  const int width = grid.width();
  const int height = grid.height();
  for (int k = 0; k < grid.cell_count(); ++k) {
    const ObjectId is = grid.top(k);
    if (is == kNoObject || objects[is].kind != Kind::kRuleIs) continue;
    const int x = k % width;
    const int y = k / width;
    if (x >= 1 && x + 1 < width) maybe_add(grid.top(k - 1), grid.top(k + 1), objects, out);
    if (y >= 1 && y + 1 < height) maybe_add(grid.top(k - width), grid.top(k + width), objects, out);
  }
}

}  // namespace turnrl::envs::babaisai
