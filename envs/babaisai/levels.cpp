#include "envs/babaisai/levels.h"

#include <algorithm>
#include <array>
#include <stdexcept>

namespace turnrl::envs::babaisai {

int64_t TracedRandom::randint(int64_t low, int64_t high) {
  const int64_t value = state_.randint(low, high);
  if (trace_) trace_->push_back(RngCall{false, low, high, 0, true, {value}});
  return value;
}

int64_t TracedRandom::choice(int64_t n) {
  const int64_t value = state_.choice(n);
  if (trace_) trace_->push_back(RngCall{true, n, 0, 0, true, {value}});
  return value;
}

std::vector<int64_t> TracedRandom::choice(int64_t n, int64_t size, bool replace) {
  std::vector<int64_t> values = state_.choice(n, size, replace);
  if (trace_) trace_->push_back(RngCall{true, n, 0, size, replace, values});
  return values;
}

namespace {

// ---------------------------------------------------------------- level ids

struct Base {
  std::string_view name;
  LevelConfig config;
  bool takes_suffix;
};

LevelConfig two_room(ObjectArea area, bool break_stop, bool break_win) {
  LevelConfig c;
  c.layout = Layout::kTwoRoom;
  c.object_area = area;
  c.break_stop_rule = break_stop;
  c.break_win_rule = break_win;
  return c;
}

LevelConfig make_you(Layout layout, bool break_win, bool irrelevant) {
  LevelConfig c;
  c.layout = layout;
  c.break_win_rule = break_win;
  c.distractor_obj = true;
  c.distractor_rule_block = true;
  c.irrelevant_rule_distractor = irrelevant;
  return c;
}

LevelConfig one_room(bool break_win) {
  LevelConfig c;
  c.break_win_rule = break_win;
  return c;
}

const Base kBases[] = {
    {"goto_win", one_room(false), true},
    {"make_win", one_room(true), true},
    {"two_room-goto_win", two_room(ObjectArea::kLeftAnywhere, true, false), true},
    {"two_room-break_stop-goto_win", two_room(ObjectArea::kRightAnywhere, false, false), true},
    {"two_room-maybe_break_stop-goto_win", two_room(ObjectArea::kAnywhere, false, false), true},
    {"two_room-make_win", two_room(ObjectArea::kLeftAnywhere, true, true), true},
    {"two_room-break_stop-make_win", two_room(ObjectArea::kRightAnywhere, false, true), true},
    {"two_room-make_you", make_you(Layout::kTwoRoomMakeYou, false, false), false},
    {"two_room-make_you-make_win", make_you(Layout::kTwoRoomMakeYou, true, false), false},
    {"two_room-make_wall_win", make_you(Layout::kTwoRoomMakeWallWin, false, true), false},
};

struct Suffix {
  std::string_view text;
  bool distractor_obj, distractor_rule, irrelevant, win_rule;
};
const Suffix kSuffixes[] = {
    {"-distr_obj", true, false, false, false},          {"-distr_rule", false, true, false, false},
    {"-distr_obj_rule", true, true, false, false},      {"-distr_obj-irrelevant_rule", true, true, true, false},
    {"-distr_win_rule", true, true, false, true},       {"", false, false, false, false},
};

// BALROG's config `tasks.babaisai_tasks`, without the "env/" prefix.
constexpr std::string_view kBalrogOrder[] = {
    "make_win-distr_obj_rule",
    "goto_win-distr_obj_rule",
    "goto_win",
    "goto_win-distr_obj",
    "goto_win-distr_rule",
    "goto_win-distr_obj-irrelevant_rule",
    "make_win-distr_obj",
    "make_win-distr_rule",
    "make_win",
    "make_win-distr_obj-irrelevant_rule",
    "two_room-goto_win",
    "two_room-goto_win-distr_obj_rule",
    "two_room-goto_win-distr_rule",
    "two_room-goto_win-distr_obj",
    "two_room-goto_win-distr_obj-irrelevant_rule",
    "two_room-goto_win-distr_win_rule",
    "two_room-break_stop-goto_win-distr_obj_rule",
    "two_room-break_stop-goto_win-distr_obj",
    "two_room-break_stop-goto_win-distr_rule",
    "two_room-break_stop-goto_win-distr_obj-irrelevant_rule",
    "two_room-break_stop-goto_win",
    "two_room-maybe_break_stop-goto_win-distr_obj_rule",
    "two_room-maybe_break_stop-goto_win",
    "two_room-maybe_break_stop-goto_win-distr_obj",
    "two_room-maybe_break_stop-goto_win-distr_rule",
    "two_room-maybe_break_stop-goto_win-distr_obj-irrelevant_rule",
    "two_room-make_win-distr_obj_rule",
    "two_room-make_win-distr_rule",
    "two_room-make_win",
    "two_room-make_win-distr_obj-irrelevant_rule",
    "two_room-make_win-distr_obj",
    "two_room-make_win-distr_win_rule",
    "two_room-break_stop-make_win-distr_obj_rule",
    "two_room-break_stop-make_win-distr_rule",
    "two_room-break_stop-make_win",
    "two_room-break_stop-make_win-distr_obj-irrelevant_rule",
    "two_room-break_stop-make_win-distr_obj",
    "two_room-make_you",
    "two_room-make_you-make_win",
    "two_room-make_wall_win",
};

LevelConfig config_of(std::string_view name) {
  for (const Base& base : kBases) {
    if (!base.takes_suffix) {
      if (name == base.name) return base.config;
      continue;
    }
    for (const Suffix& suffix : kSuffixes) {
      if (name.size() != base.name.size() + suffix.text.size() || !name.starts_with(base.name) ||
          !name.ends_with(suffix.text)) {
        continue;
      }
      LevelConfig config = base.config;
      config.distractor_obj = suffix.distractor_obj;
      config.distractor_rule_block = suffix.distractor_rule;
      config.irrelevant_rule_distractor = suffix.irrelevant;
      config.distractor_win_rule = suffix.win_rule;
      return config;
    }
  }
  throw std::logic_error("babaisai: no generator for level '" + std::string(name) + "'");
}

// ---------------------------------------------------------------- generation

struct Area {
  Pos top;
  Pos size;
};

constexpr Thing kNames[] = {Thing::kBall, Thing::kKey, Thing::kDoor};   // envs.py NAMES
constexpr Color kColors[] = {Color::kRed, Color::kBlue, Color::kGreen};  // envs.py COLORS

struct SampledObjects {
  Object obj1, obj2, obj3;  // the win object, the distractor object, the "irrelevant" rule name
};

// Cells of the right room's far column and bottom row (13x9 two-room levels).
constexpr std::array<Pos, 9> kRightUnpushable = {
    Pos{11, 2}, Pos{11, 3}, Pos{11, 4}, Pos{11, 5}, Pos{11, 6}, Pos{11, 7}, Pos{10, 7}, Pos{9, 7}, Pos{8, 7}};

class Generator {
 public:
  Generator(TracedRandom& random, World& world) : random_(random), world_(world) {}

  std::string one_room(const LevelConfig& c);
  std::string two_room(const LevelConfig& c);
  std::string two_room_make_you(const LevelConfig& c);
  std::string two_room_make_wall_win();

 private:
  using RulePositions = std::array<Pos, 3>;

  void start_two_rooms();
  SampledObjects sample_objects();
  /** Rejection sampling of an empty cell in the area; puts `object` there if given. */
  Pos place(const Object* object, Area area);
  Pos place(const Object& object, Area area) { return place(&object, area); }
  RulePositions put_rule(Thing subject, Property property, Pos left);
  /** Moves the top object of `from` onto the stack at `to`. */
  void move_top(Pos from, Pos to);

  TracedRandom& random_;
  World& world_;
};

void Generator::start_two_rooms() {
  world_.clear(13, 9);
  world_.add_border();
  for (int y = 1; y <= 7; ++y) world_.add({6, y}, Object::thing_of(Thing::kWall, Color::kGrey));
}

SampledObjects Generator::sample_objects() {
  const std::vector<int64_t> names = random_.choice(3, 3, false);
  const std::vector<int64_t> colors = random_.choice(3, 3, true);
  auto object = [&](int k) { return Object::thing_of(kNames[names[k]], kColors[colors[k]]); };
  return {object(0), object(1), object(2)};
}

Pos Generator::place(const Object* object, Area area) {
  const Grid& grid = world_.grid;
  const Pos top{std::max(area.top.x, 0), std::max(area.top.y, 0)};
  const int high_x = std::min(top.x + area.size.x, grid.width());
  const int high_y = std::min(top.y + area.size.y, grid.height());
  constexpr long kMaxTries = 100000;
  for (long tries = 0; tries <= kMaxTries; ++tries) {
    const Pos pos{static_cast<int>(random_.randint(top.x, high_x)), static_cast<int>(random_.randint(top.y, high_y))};
    if (grid.top(pos) != kNoObject) continue;
    if (object) world_.add(pos, *object);
    return pos;
  }
  throw std::runtime_error("babaisai: rejection sampling failed in place_obj");
}

Generator::RulePositions Generator::put_rule(Thing subject, Property property, Pos left) {
  const RulePositions positions = {left, Pos{left.x + 1, left.y}, Pos{left.x + 2, left.y}};
  world_.add(positions[0], Object::rule_object(subject));
  world_.add(positions[1], Object::rule_is());
  world_.add(positions[2], Object::rule_property(property));
  return positions;
}

void Generator::move_top(Pos from, Pos to) {
  const ObjectId id = world_.grid.top(from);
  if (id == kNoObject || from == to) return;
  world_.grid.push(to, id);
  world_.grid.pop(from);
}

std::string name_of(const Object& thing) { return std::string(thing_display_name(thing.thing)); }

std::string Generator::one_room(const LevelConfig& c) {
  world_.clear(8, 8);
  world_.add_border();
  const SampledObjects s = sample_objects();
  put_rule(Thing::kBaba, Property::kAgent, {1, 6});
  const RulePositions win_rule = put_rule(s.obj1.thing, Property::kGoal, {1, 1});
  if (c.break_win_rule) move_top(win_rule[0], place(nullptr, {{2, 2}, {4, 4}}));
  if (c.distractor_rule_block) {
    // (6, 1) and (6, 6) are listed twice in the original, which skews the draw.
    static constexpr Pos kPositions[] = {{4, 6}, {5, 6}, {6, 6}, {4, 1}, {5, 1}, {6, 1},
                                         {6, 1}, {6, 2}, {6, 3}, {6, 4}, {6, 5}, {6, 6}};
    const Pos pos = kPositions[random_.choice(12)];
    world_.add(pos, Object::rule_object(c.irrelevant_rule_distractor ? s.obj3.thing : s.obj2.thing));
  }
  const Area rest_of_grid{{1, 2}, {8, 8}};  // the original passes only `top`: size defaults to the grid
  place(Object::default_thing(Thing::kBaba), rest_of_grid);
  place(s.obj1, rest_of_grid);
  if (c.distractor_obj) place(s.obj2, rest_of_grid);
  const std::string win = name_of(s.obj1);
  return c.break_win_rule ? "make[" + win + " is win], goto[" + win + "]" : "goto[" + win + "]";
}

std::string Generator::two_room(const LevelConfig& c) {
  static constexpr Area kLeftPushable{{2, 3}, {4, 3}};
  static constexpr Area kRightPushable{{7, 3}, {4, 3}};
  static constexpr Area kObjectAreas[] = {{{1, 1}, {4, 7}}, {{7, 2}, {4, 7}}, {{1, 2}, {11, 7}}};
  start_two_rooms();
  const SampledObjects s = sample_objects();
  put_rule(Thing::kBaba, Property::kAgent, {1, 7});
  const RulePositions stop_rule = put_rule(Thing::kWall, Property::kStop, {1, 2});
  const RulePositions win_rule = put_rule(s.obj1.thing, Property::kGoal, {9, 1});
  if (c.distractor_rule_block) {
    if (c.irrelevant_rule_distractor) {
      place(Object::rule_object(s.obj3.thing), kRightPushable);
    } else if (c.distractor_obj) {
      // Out of reach, so that the distractor object cannot be made to win.
      world_.add(kRightUnpushable[random_.choice(9)], Object::rule_object(s.obj2.thing));
    } else {
      place(Object::rule_object(s.obj2.thing), kRightPushable);
    }
  }
  if (c.break_stop_rule) {
    const Pos to = place(nullptr, kLeftPushable);
    static constexpr int kBlocks[] = {1, 2};  // "is" or "stop"
    move_top(stop_rule[kBlocks[random_.choice(2)]], to);
  }
  if (c.break_win_rule) move_top(win_rule[0], place(nullptr, kRightPushable));
  const Area object_area = kObjectAreas[static_cast<int>(c.object_area)];
  place(Object::default_thing(Thing::kBaba), kLeftPushable);
  const Pos obj1_pos = place(s.obj1, object_area);
  if (c.distractor_obj) place(s.obj2, object_area);
  if (c.distractor_win_rule) put_rule(s.obj3.thing, Property::kGoal, {9, 4});

  const std::string win = name_of(s.obj1);
  const std::string go = "goto[" + win + "]";
  const std::string make = "make[" + win + " is win], ";
  if (!c.break_win_rule) {
    // A win object on the left, or a room divider that is already open, needs no rule change.
    if (obj1_pos.x < 6 || c.break_stop_rule) return go;
    return "break[wall is stop], " + go;
  }
  return (c.break_stop_rule ? "" : "break[wall is stop], ") + make + go;
}

std::string Generator::two_room_make_you(const LevelConfig& c) {
  static constexpr Area kLeftPushable{{2, 3}, {3, 3}};
  static constexpr Area kRightPushable{{8, 3}, {3, 3}};
  static constexpr Area kRightAnywhere{{7, 2}, {4, 7}};
  start_two_rooms();
  const SampledObjects s = sample_objects();
  // One row higher than in TwoRoomEnv: "baba is you" can be broken here.
  put_rule(Thing::kBaba, Property::kAgent, {1, 6});
  put_rule(Thing::kWall, Property::kStop, {1, 1});
  const RulePositions win_rule = put_rule(s.obj1.thing, Property::kGoal, {9, 1});
  place(Object::rule_object(c.irrelevant_rule_distractor ? s.obj3.thing : s.obj2.thing), kLeftPushable);
  if (c.break_win_rule) move_top(win_rule[0], place(nullptr, kRightPushable));
  place(Object::default_thing(Thing::kBaba), kLeftPushable);
  place(s.obj1, kRightAnywhere);
  place(s.obj2, kRightAnywhere);
  const std::string win = name_of(s.obj1);
  const std::string make_you = "make[" + name_of(s.obj2) + " is you], ";
  return make_you + (c.break_win_rule ? "make[" + win + " is win], " : "") + "goto[" + win + "]";
}

std::string Generator::two_room_make_wall_win() {
  static constexpr Area kLeftPushable{{2, 3}, {3, 3}};
  static constexpr Area kRightPushable{{8, 3}, {3, 3}};
  static constexpr Area kRightAnywhere{{7, 2}, {4, 7}};
  start_two_rooms();
  const SampledObjects s = sample_objects();
  put_rule(Thing::kBaba, Property::kAgent, {1, 7});
  put_rule(Thing::kWall, Property::kStop, {2, 2});
  const RulePositions win_rule = put_rule(s.obj1.thing, Property::kGoal, {9, 1});
  place(Object::rule_object(s.obj3.thing), kRightPushable);
  // Written without checking the destination: the block may land on another one.
  move_top(win_rule[0], kRightUnpushable[random_.choice(9)]);
  place(Object::default_thing(Thing::kBaba), kLeftPushable);
  place(s.obj1, kRightAnywhere);
  place(s.obj2, kRightAnywhere);
  return "break[wall is stop], make[wall is win], goto[wall]";
}

}  // namespace

const std::vector<LevelId>& balrog_levels() {
  static const std::vector<LevelId> levels = [] {
    std::vector<LevelId> all;
    for (std::string_view name : kBalrogOrder) all.push_back({std::string(name), config_of(name)});
    return all;
  }();
  return levels;
}

std::string generate_level(const LevelConfig& config, TracedRandom& random, World& world) {
  Generator generator(random, world);
  std::string plan;
  switch (config.layout) {
    case Layout::kOneRoom: plan = generator.one_room(config); break;
    case Layout::kTwoRoom: plan = generator.two_room(config); break;
    case Layout::kTwoRoomMakeYou: plan = generator.two_room_make_you(config); break;
    case Layout::kTwoRoomMakeWallWin: plan = generator.two_room_make_wall_win(); break;
  }
  world.start_episode();
  return plan;
}

}  // namespace turnrl::envs::babaisai
