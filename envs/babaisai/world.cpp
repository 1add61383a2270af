#include "envs/babaisai/world.h"

#include <stdexcept>

namespace turnrl::envs::babaisai {
namespace {

// Direction set by each action (idle keeps the current one).
constexpr int kActionDir[kNumActions] = {-1, 3, 0, 1, 2};

}  // namespace

void World::clear(int width, int height) {
  grid.reset(width, height);
  objects.clear();
  rules.clear();
  agent_pos = {0, 0};
  agent_dir = 0;
  step_count = 0;
}

ObjectId World::add(Pos p, const Object& object) {
  const auto id = static_cast<ObjectId>(objects.size());
  objects.push_back(object);
  grid.push(p, id);
  return id;
}

void World::add_border() {
  const int w = grid.width();
  const int h = grid.height();
  for (int x = 0; x < w; ++x) add({x, 0}, Object::border());
  for (int x = 0; x < w; ++x) add({x, h - 1}, Object::border());
  for (int y = 0; y < h; ++y) add({0, y}, Object::border());
  for (int y = 0; y < h; ++y) add({w - 1, y}, Object::border());
}

bool World::is_push(ObjectId id) const {
  switch (objects[id].kind) {
    case Kind::kBorder: return false;
    case Kind::kThing: return is(id, Property::kPush);
    default: return true;
  }
}

void World::start_episode() {
  refresh_rules();
  step_count = 0;
  for (int k = 0; k < grid.cell_count(); ++k) {
    const ObjectId id = grid.top(k);
    if (id != kNoObject && is(id, Property::kAgent)) {
      agent_pos = grid.pos_of(k);
      agent_dir = objects[id].dir;
      return;
    }
  }
  // Every BALROG level writes "baba is you" and places baba; the original would otherwise
  // draw a random free cell for an invisible agent.
  throw std::logic_error("babaisai: generated level has no 'you' object");
}

void World::open_shut(Pos pos, Pos fwd) {
  const ObjectId a = grid.top(pos);
  const ObjectId b = grid.top(fwd);
  if (a == kNoObject || b == kNoObject) return;
  if ((is(a, Property::kOpen) && is(b, Property::kShut)) || (is(a, Property::kShut) && is(b, Property::kOpen))) {
    grid.pop(pos);
    grid.pop(fwd);
  }
}

MoveOutcome World::move(Pos pos, int dir) {
  const Pos fwd = pos + kDirVec[dir];
  // The original decides whether to push from the front object seen before open/shut removal.
  const ObjectId front_before = grid.top(fwd);
  open_shut(pos, fwd);
  if (front_before != kNoObject && is_push(front_before)) move(fwd, dir);
  const ObjectId front = grid.top(fwd);
  MoveOutcome out;
  out.new_pos = (front == kNoObject || can_overlap(front)) ? fwd : pos;
  const ObjectId at_destination = grid.top(out.new_pos);
  if (at_destination != kNoObject) {
    out.win = is(at_destination, Property::kGoal);
    out.lose = is(at_destination, Property::kDefeat);
  }
  if (out.new_pos != pos) {
    const ObjectId moving = grid.top(pos);
    if (moving != kNoObject) {
      grid.push(out.new_pos, moving);
      grid.pop(pos);
      objects[moving].dir = static_cast<uint8_t>(dir);
    }
  }
  const Pos behind = pos - kDirVec[dir];
  const ObjectId pulled = grid.top(behind);
  if (pulled != kNoObject && is(pulled, Property::kPull)) move(behind, dir);
  return out;
}

StepOutcome World::step(int action) {
  ++step_count;
  StepOutcome out;
  if (action != kIdle) {
    agent_dir = kActionDir[action];
    const int cells = grid.cell_count();
    for (int k = 0; k < cells; ++k) {
      const ObjectId id = grid.top(k);
      if (id != kNoObject && (is(id, Property::kAgent) || is(id, Property::kMove))) objects[id].has_moved = false;
    }
    bool win = false;
    bool lose = false;
    // The scans see the grid as it changes: a thing moved right or down is met again but skipped.
    for (int k = 0; k < cells; ++k) {
      const ObjectId id = grid.top(k);
      if (id == kNoObject || !is(id, Property::kAgent) || objects[id].has_moved) continue;
      objects[id].dir = static_cast<uint8_t>(agent_dir);
      const MoveOutcome moved = move(grid.pos_of(k), agent_dir);
      objects[id].has_moved = true;
      agent_pos = moved.new_pos;
      win = moved.win;
      lose = moved.lose;
    }
    for (int k = 0; k < cells; ++k) {
      const ObjectId id = grid.top(k);
      if (id == kNoObject || !is(id, Property::kMove) || objects[id].has_moved) continue;
      move(grid.pos_of(k), objects[id].dir);
      objects[id].has_moved = true;
    }
    if (win) {
      out.reward = 1.0 - 0.9 * (static_cast<double>(step_count) / max_steps);
      out.done = true;
    } else if (lose) {
      out.reward = -1.0;
      out.done = true;
    }
    refresh_rules();
    apply_replacements();
  }
  if (step_count >= max_steps) out.done = true;
  return out;
}

void World::apply_replacements() {
  for (const Rule& rule : rules.rules()) {
    if (!rule.replacement) continue;
    for (int k = 0; k < grid.cell_count(); ++k) {
      const ObjectId id = grid.top(k);
      if (id == kNoObject || objects[id].kind != Kind::kThing || objects[id].thing != rule.object) continue;
      // The original stacks the new object on top of the old one.
      add(grid.pos_of(k), Object::default_thing(rule.object2));
    }
  }
}

void World::write_grid(StateWriter& out) const {
  out.put(grid.width());
  out.put(grid.height());
  for (int y = 0; y < grid.height(); ++y) {
    for (int x = 0; x < grid.width(); ++x) {
      const CellStack& stack = grid.stack(Pos{x, y});
      out.put(stack.size());
      for (const ObjectId id : stack) out.put(objects[id].packed());
    }
  }
}

}  // namespace turnrl::envs::babaisai
