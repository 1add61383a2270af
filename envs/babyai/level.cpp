#include "envs/babyai/level.h"

#include <algorithm>

namespace turnrl::envs::babyai {
namespace {

constexpr const char* kExcludedPhrases[] = {"yellow box", "red key", "red door", "green ball", "grey door"};
constexpr int kPlaceTries = 1000;

ObjectDesc describe(const WorldObject& obj) {
  ObjectDesc desc;
  desc.type = obj.type;
  desc.color = obj.color;
  return desc;
}

}  // namespace

LevelGenerator::LevelGenerator(Task task, int num_dists)
    : task_(task), num_dists_(num_dists), num_cols_(task == Task::kOpen ? 2 : 1) {}

int64_t LevelGenerator::integers(int64_t low, int64_t high) {
  const int64_t result = rng_.integers(low, high);
  if (trace_) trace_->push_back({low, high, result});
  return result;
}

Color LevelGenerator::random_color() { return kSortedColors[integers(0, kSortedColors.size())]; }

void LevelGenerator::build_rooms() {
  World& world = level_->world;
  world.grid.clear();
  world.objects.clear();
  rooms_.assign(num_rows_ * num_cols_, Room{});
  for (int j = 0; j < num_rows_; ++j) {
    for (int i = 0; i < num_cols_; ++i) {
      Room& room = rooms_[j * num_cols_ + i];
      room.top = {i * (kRoomSize - 1), j * (kRoomSize - 1)};
      world.grid.wall_rect(room.top, kRoomSize, kRoomSize);
    }
  }
  for (int j = 0; j < num_rows_; ++j) {
    for (int i = 0; i < num_cols_; ++i) {
      Room& room = rooms_[j * num_cols_ + i];
      const int x_lo = room.top.x + 1, y_lo = room.top.y + 1;
      const int x_hi = room.top.x + kRoomSize - 1, y_hi = room.top.y + kRoomSize - 1;
      if (i < num_cols_ - 1) {
        room.neighbor[0] = j * num_cols_ + i + 1;
        room.door_pos[0] = Pos{x_hi, static_cast<int>(integers(y_lo, y_hi))};
      }
      if (j < num_rows_ - 1) {
        room.neighbor[1] = (j + 1) * num_cols_ + i;
        room.door_pos[1] = Pos{static_cast<int>(integers(x_lo, x_hi)), y_hi};
      }
      if (i > 0) {
        room.neighbor[2] = j * num_cols_ + i - 1;
        room.door_pos[2] = rooms_[room.neighbor[2]].door_pos[0];
      }
      if (j > 0) {
        room.neighbor[3] = (j - 1) * num_cols_ + i;
        room.door_pos[3] = rooms_[room.neighbor[3]].door_pos[1];
      }
    }
  }
  world.agent_pos = {(num_cols_ / 2) * (kRoomSize - 1) + kRoomSize / 2, (num_rows_ / 2) * (kRoomSize - 1) + kRoomSize / 2};
  world.agent_dir = 0;
}

Pos LevelGenerator::place_obj(Pos top, bool reject_next_to_agent) {
  const World& world = level_->world;
  const int width = world.grid.width(), height = world.grid.height();
  for (int tries = 0;; ++tries) {
    if (tries > kPlaceTries) throw Rejected{};
    const Pos pos = {static_cast<int>(integers(top.x, std::min(top.x + kRoomSize, width))),
                     static_cast<int>(integers(top.y, std::min(top.y + kRoomSize, height)))};
    if (world.grid.at(pos) != Grid::kEmpty || pos == world.agent_pos) continue;
    if (reject_next_to_agent &&
        std::abs(pos.x - world.agent_pos.x) + std::abs(pos.y - world.agent_pos.y) < 2) {
      continue;
    }
    return pos;
  }
}

void LevelGenerator::place_agent() {
  World& world = level_->world;
  const int i = static_cast<int>(integers(0, num_cols_));
  const int j = static_cast<int>(integers(0, num_rows_));
  const Room& room = rooms_[j * num_cols_ + i];
  for (;;) {
    world.agent_pos = {-1, -1};
    world.agent_pos = place_obj(room.top, false);
    world.agent_dir = static_cast<int>(integers(0, 4));
    const int16_t front = world.grid.at(world.front_pos());
    if (front == Grid::kEmpty || front == Grid::kWall) return;
  }
}

int16_t LevelGenerator::add_object(int room, ObjectType type, Color color) {
  World& world = level_->world;
  const Pos pos = place_obj(rooms_[room].top, true);
  const int16_t id = world.add_object(type, color);
  world.grid.set(pos, id);
  world.objects[id].cur_pos = pos;
  return id;
}

std::vector<int16_t> LevelGenerator::add_distractors(std::optional<int> room, int count) {
  static constexpr ObjectType kKinds[] = {ObjectType::kKey, ObjectType::kBall, ObjectType::kBox};
  std::vector<int16_t> added;
  for (int n = 0; n < count; ++n) {
    const Color color = random_color();
    const ObjectType type = kKinds[integers(0, 3)];
    int target = 0;
    if (room) {
      target = *room;
    } else {
      const int i = static_cast<int>(integers(0, num_cols_));
      const int j = static_cast<int>(integers(0, num_rows_));
      target = j * num_cols_ + i;
    }
    added.push_back(add_object(target, type, color));
  }
  return added;
}

bool LevelGenerator::objects_reachable() const {
  const World& world = level_->world;
  const Grid& grid = world.grid;
  std::vector<char> reached(grid.width() * grid.height(), 0);
  std::vector<Pos> stack = {world.agent_pos};
  while (!stack.empty()) {
    const Pos p = stack.back();
    stack.pop_back();
    if (!grid.contains(p) || reached[p.y * grid.width() + p.x]) continue;
    reached[p.y * grid.width() + p.x] = 1;
    const int16_t cell = grid.at(p);
    // Anything but a door blocks (even a locked door counts as passable here).
    if (cell == Grid::kWall || (cell >= 0 && world.objects[cell].type != ObjectType::kDoor)) continue;
    stack.push_back({p.x + 1, p.y});
    stack.push_back({p.x - 1, p.y});
    stack.push_back({p.x, p.y + 1});
    stack.push_back({p.x, p.y - 1});
  }
  for (int x = 0; x < grid.width(); ++x) {
    for (int y = 0; y < grid.height(); ++y) {
      if (grid.at({x, y}) >= 0 && !reached[y * grid.width() + x]) return false;
    }
  }
  return true;
}

bool LevelGenerator::excluded() const {
  const std::string surface = level_->instruction->surface(level_->world);
  return std::any_of(std::begin(kExcludedPhrases), std::end(kExcludedPhrases),
                     [&](const char* phrase) { return surface.find(phrase) != std::string::npos; });
}

bool LevelGenerator::gen_open() {
  World& world = level_->world;
  static constexpr Color kDoorColors[] = {Color::kYellow, Color::kGreen, Color::kBlue, Color::kPurple};
  const Color door_color = kDoorColors[integers(0, 4)];
  // add_locked_room: a locked door on an inner wall, then its key in another room.
  int locked_room = 0;
  for (;;) {
    const int i = static_cast<int>(integers(0, num_cols_));
    const int j = static_cast<int>(integers(0, num_rows_));
    const int side = static_cast<int>(integers(0, 4));
    locked_room = j * num_cols_ + i;
    Room& room = rooms_[locked_room];
    if (room.neighbor[side] < 0) continue;
    const int16_t door = world.add_object(ObjectType::kDoor, door_color);
    world.objects[door].is_locked = true;
    world.objects[door].cur_pos = *room.door_pos[side];
    world.grid.set(*room.door_pos[side], door);
    room.door[side] = door;
    rooms_[room.neighbor[side]].door[(side + 2) % 4] = door;
    break;
  }
  for (;;) {
    const int i = static_cast<int>(integers(0, num_cols_));
    const int j = static_cast<int>(integers(0, num_rows_));
    if (j * num_cols_ + i == locked_room) continue;
    add_object(j * num_cols_ + i, ObjectType::kKey, door_color);
    break;
  }
  // connect_all draws nothing: the two rooms are joined by the locked door already.
  for (int room = 0; room < num_rows_ * num_cols_; ++room) {
    if (room != locked_room) add_distractors(room, num_dists_);
  }
  do {
    place_agent();
  } while (room_of(world.agent_pos) == locked_room);
  const bool reachable = objects_reachable();
  ObjectDesc desc;
  desc.type = ObjectType::kDoor;
  if (integers(0, 2) == 1) desc.color = door_color;
  level_->instruction = Instruction::open(std::move(desc));
  return reachable;
}

bool LevelGenerator::gen_two_objects() {
  const std::vector<int16_t> objs = add_distractors(std::nullopt, num_dists_ + 2);
  const bool reachable = objects_reachable();
  const World& world = level_->world;
  auto same = [&](int16_t a, int16_t b) {
    return world.objects[a].type == world.objects[b].type && world.objects[a].color == world.objects[b].color;
  };
  // No draws are repeated for doors: these levels hold none.
  const int16_t first = objs[integers(0, objs.size())];
  int16_t second = objs[integers(0, objs.size())];
  if (same(first, second)) {
    ObjectDesc desc = describe(world.objects[first]);
    desc.find_matching(world);
    // If the first object is the only one of its description, the second must differ.
    if (desc.objects.size() < 2) {
      while (same(first, second)) second = objs[integers(0, objs.size())];
    }
  }
  if (task_ == Task::kPutNext) {
    level_->instruction = Instruction::put_next(describe(world.objects[first]), describe(world.objects[second]));
    return reachable;
  }
  auto pick = Instruction::pickup(describe(world.objects[first]));
  auto go = Instruction::go_to(describe(world.objects[second]));
  const bool before = integers(0, 2) == 0;  // choice(["Before", "After"])
  level_->instruction = before ? Instruction::before(std::move(pick), std::move(go))
                               : Instruction::after(std::move(go), std::move(pick));
  return reachable;
}

void LevelGenerator::gen_mission() {
  integers(0, 1);  // the original picks the action kind from a one-element list
  for (;;) {
    build_rooms();
    bool reachable = false;
    switch (task_) {
      case Task::kOpen:
        reachable = gen_open();
        break;
      case Task::kGoTo:
      case Task::kPickup: {
        place_agent();
        const std::vector<int16_t> objs = add_distractors(std::nullopt, num_dists_ + 1);
        reachable = objects_reachable();
        ObjectDesc desc = describe(level_->world.objects[objs[integers(0, objs.size())]]);
        level_->instruction = task_ == Task::kGoTo ? Instruction::go_to(std::move(desc))
                                                   : Instruction::pickup(std::move(desc));
        break;
      }
      case Task::kPutNext:
      case Task::kPickUpSeqGoTo:
        place_agent();
        reachable = gen_two_objects();
        break;
    }
    // The surface text is built (and checked for excluded phrases) even when unreachable.
    if (!excluded() && reachable) return;
  }
}

void LevelGenerator::validate(Instruction& instruction) {
  if (instruction.kind() != Instruction::Kind::kPutNext) return;
  const World& world = level_->world;
  instruction.reset_verifier(world);
  const auto& moved = instruction.desc().objects;
  const auto& fixed = instruction.desc_fixed().objects;
  for (int16_t obj : moved) {
    if (std::find(fixed.begin(), fixed.end(), obj) != fixed.end()) throw Rejected{};
  }
  if (instruction.objects_next(world)) throw Rejected{};
  if (moved.size() == 1 && fixed.size() == 1 && moved[0] == fixed[0]) throw Rejected{};
}

void LevelGenerator::generate(uint64_t seed, Level& level, std::vector<RngCall>* trace) {
  rng_.seed_with(seed);
  trace_ = trace;
  level_ = &level;
  level.num_cols = num_cols_;
  level.num_rows = num_rows_;
  World& world = level.world;
  world.grid = Grid(num_cols_ * (kRoomSize - 1) + 1, num_rows_ * (kRoomSize - 1) + 1);
  for (;;) {
    level.instruction.reset();
    try {
      build_rooms();
      gen_mission();
      validate(*level.instruction);
    } catch (const Rejected&) {
      continue;
    }
    break;
  }
  level.mission = level.instruction->surface(world);
  world.carrying = Grid::kEmpty;
  world.step_count = 0;
  level.instruction->reset_verifier(world);
  world.max_steps = level.instruction->num_navs() * kRoomSize * kRoomSize * num_rows_ * num_cols_;
  trace_ = nullptr;
  level_ = nullptr;
}

}  // namespace turnrl::envs::babyai
