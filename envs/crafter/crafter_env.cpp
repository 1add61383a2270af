#include "envs/crafter/crafter_env.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "envs/common/numpy_random.h"
#include "envs/common/state_writer.h"
#include "envs/crafter/balrog_text.h"
#include "envs/crafter/objects.h"
#include "envs/crafter/worldgen.h"

namespace turnrl::envs::crafter {

const std::vector<ActionSpec>& CrafterEnv::actions() const { return balrog_actions(); }
namespace {

constexpr int64_t kWorldSeedModulus = (int64_t{1} << 31) - 1;
constexpr uint64_t kPythonHashModulus = (uint64_t{1} << 61) - 1;

/** One balancing pass (Env._balance_object): creature kind, its material and thresholds. */
struct BalanceRule {
  Kind kind;
  Material material;
  int spawn_dist;
  int despawn_dist;
  double spawn_prob;
  double despawn_prob;
};

Object make_creature(Kind kind, Pos pos) {
  Object obj;
  obj.kind = kind;
  obj.pos = pos;
  obj.health = kind == Kind::kZombie ? 5 : 3;
  return obj;
}

char cell_char(const World& world, Pos p, const Player& player) {
  if (!world.inside(p)) return ' ';
  if (const int slot = world.object_at(p)) {
    switch (world.object(slot).kind) {
      case Kind::kPlayer:
        if (player.sleeping) return 'z';
        if (player.facing.x < 0) return '<';
        if (player.facing.x > 0) return '>';
        return player.facing.y < 0 ? '^' : 'v';
      case Kind::kCow: return 'C';
      case Kind::kZombie: return 'Z';
      case Kind::kSkeleton: return 'S';
      case Kind::kArrow: return '*';
      case Kind::kPlant: return 'p';
    }
  }
  static constexpr char kMaterialChars[] = " ~.#_:T%cidtf";
  return kMaterialChars[static_cast<int>(world.material(p))];
}

}  // namespace

CrafterEnv::CrafterEnv(std::string id, const CrafterConfig& config)
    : id_(std::move(id)), config_(config), world_(config.area.x, config.area.y) {
  // LocalView draws the world part of the image: view.x by (view.y - item rows) units.
  const int item_rows = (kNumItems + config.view.x - 1) / config.view.x;
  const uint64_t unit_x = config.size.x / config.view.x, unit_y = config.size.y / config.view.y;
  const uint64_t pixels = config.view.x * unit_x * std::max(0, config.view.y - item_rows) * unit_y;
  night_draws_ = (config.balrog ? 2 : 1) * 2 * pixels;  // two 32-bit outputs per uniform double
  update_radius_ = 2 * std::max(config.view.x, config.view.y);
}

void CrafterEnv::require_reset() const {
  if (!has_reset_) throw std::logic_error("env " + id_ + ": call reset() before stepping or observing");
}

void CrafterEnv::reset_episode(uint64_t seed, int episode) {
  if (episode < 1) throw std::out_of_range("env " + id_ + ": episode must be >= 1, got " + std::to_string(episode));
  episode_ = episode;
  step_ = 0;
  const int64_t hash = python_tuple_hash({seed % kPythonHashModulus, static_cast<uint64_t>(episode)});
  world_seed_ = static_cast<uint32_t>(python_mod(hash, kWorldSeedModulus));
  world_.reset(world_seed_);
  update_daylight();
  player_.reset();
  const Pos center{config_.area.x / 2, config_.area.y / 2};
  Object player_object;
  player_object.kind = Kind::kPlayer;
  player_object.pos = center;
  world_.add(player_object);
  last_health_ = player_.health();
  unlocked_.fill(false);
  generate_world(world_, center);
  render_draws();
  done_ = false;
  has_reset_ = true;
  if (config_.balrog) crafter_step(action::kNoop);  // BALROG drops this step's result
  balrog_steps_ = 0;
}

void CrafterEnv::update_daylight() {
  const double progress = std::fmod(step_ / 300.0, 1.0) + 0.3;
  // numpy evaluates `** 3` with pow(); x*x*x differs in the last bit.
  world_.daylight = 1 - std::pow(std::abs(std::cos(M_PI * progress)), 3.0);
}

void CrafterEnv::render_draws() {
  // Night-time rendering adds uniform(32, 127) noise per pixel from the world stream.
  if (world_.daylight < 0.5) world_.random.skip32(night_draws_);
}

std::string CrafterEnv::serialize_state() const {
  require_reset();
  StateWriter out;
  out.put(world_.width());
  out.put(world_.height());
  out.put(config_.view.x);
  out.put(config_.view.y);
  for (int x = 0; x < world_.width(); ++x) {
    for (int y = 0; y < world_.height(); ++y) {
      out.put(world_.material({x, y}));
      const int slot = world_.object_at({x, y});
      out.put(slot != 0);
      if (slot == 0) continue;
      const Object& obj = world_.object(slot);
      out.put(obj.kind);
      out.put(obj.health);
      out.put(obj.facing.x);
      out.put(obj.facing.y);
      out.put(obj.cooldown);
      out.put(obj.reload);
      out.put(obj.grown);
    }
  }
  out.put(player_.facing.x);
  out.put(player_.facing.y);
  out.put(player_.sleeping);
  for (const int count : player_.inventory) out.put(count);
  for (const int count : player_.achievements) out.put(count);
  for (const double vital : {player_.hunger, player_.thirst, player_.fatigue, player_.recover}) out.put(vital);
  out.put(player_.last_health);
  for (const bool unlocked : unlocked_) out.put(unlocked);
  out.put(last_health_);
  out.put(done_);
  return out.take();
}

StepResult CrafterEnv::step(int action) {
  check_action(action);
  require_reset();
  StepResult result = crafter_step(action);
  if (config_.balrog) {
    ++balrog_steps_;
    result.truncated = !result.terminated && balrog_steps_ >= config_.balrog_max_steps;
  }
  return result;
}

StepResult CrafterEnv::crafter_step(int action) {
  ++step_;
  update_daylight();
  player_.action = action;
  const std::vector<int> snapshot = world_.live_slots();
  for (const int slot : snapshot) {
    if (distance(player_pos(), world_.object(slot).pos) >= update_radius_) continue;
    if (slot == World::kPlayerSlot) {
      update_player(world_, player_);
    } else {
      update_object(world_, player_, slot);
    }
  }
  if (step_ % 10 == 0) {
    // Chunks created while balancing are not visited (the original iterates a copy).
    const int chunks = static_cast<int>(world_.chunks().size());
    for (int i = 0; i < chunks; ++i) balance_chunk(i);
  }
  render_draws();

  StepResult result;
  const int health = player_.health();
  result.reward = (health - last_health_) / 10.0;
  last_health_ = health;
  bool new_unlock = false;
  for (int a = 0; a < kNumAchievements; ++a) {
    if (player_.achievements[a] > 0 && !unlocked_[a]) {
      unlocked_[a] = true;
      new_unlock = true;
    }
  }
  if (new_unlock) result.reward += 1.0;
  const bool dead = health <= 0;
  const bool over = config_.length > 0 && step_ >= config_.length;
  done_ = dead || over;
  if (config_.balrog) {
    result.terminated = done_;  // BALROG's gymnasium adapter reports crafter's done as terminated
  } else {
    result.terminated = dead;
    result.truncated = !dead && over;
  }
  return result;
}

void CrafterEnv::balance_chunk(int chunk_index) {
  static constexpr BalanceRule kRules[] = {
      {Kind::kZombie, Material::kGrass, 6, 0, 0.3, 0.4},
      {Kind::kSkeleton, Material::kPath, 7, 7, 0.1, 0.1},
      {Kind::kCow, Material::kGrass, 5, 5, 0.01, 0.1},
  };
  const double light = world_.daylight;
  for (const BalanceRule& rule : kRules) {
    const Chunk& chunk = world_.chunks()[chunk_index];
    std::vector<int> creatures;
    for (const int slot : chunk.slots) {
      if (world_.object(slot).kind == rule.kind) creatures.push_back(slot);
    }
    const int space = world_.count_in(chunk, rule.material);
    double target_min = 0, target_max = 0;
    switch (rule.kind) {
      case Kind::kZombie:
        target_min = space < 50 ? 0 : 3.5 - 3 * light;
        target_max = 3.5 - 3 * light;
        break;
      case Kind::kSkeleton:
        target_min = space < 6 ? 0 : 1;
        target_max = 2;
        break;
      default:
        target_min = space < 30 ? 0 : 1;
        target_max = 1.5 + light;
        break;
    }
    const int count = static_cast<int>(creatures.size());
    const Pos player = player_pos();
    if (count < static_cast<int>(target_min) && world_.random.uniform() < rule.spawn_prob) {
      std::vector<Pos> cells;
      for (int x = chunk.xmin; x < chunk.xmax; ++x) {
        for (int y = chunk.ymin; y < chunk.ymax; ++y) {
          if (world_.material({x, y}) == rule.material) cells.push_back({x, y});
        }
      }
      const Pos pos = cells[world_.random.randint(0, static_cast<int64_t>(cells.size()))];
      if (world_.object_at(pos) == 0 && distance(player, pos) >= rule.spawn_dist) {
        world_.add(make_creature(rule.kind, pos));
      }
    } else if (count > static_cast<int>(target_max) && world_.random.uniform() < rule.despawn_prob) {
      const int slot = creatures[world_.random.randint(0, count)];
      if (distance(player, world_.object(slot).pos) >= rule.despawn_dist) world_.remove(slot);
    }
  }
}


const ActionTextRules& CrafterEnv::text_rules() const {
  static const ActionTextRules kRules = [] {
    ActionTextRules rules;
    rules.letter_case = ActionTextRules::Case::kTitle;
    rules.underscores_to_spaces = false;
    rules.cut_at_newline = true;
    rules.drop_trailing_punctuation = true;
    rules.drop_parenthesised_after = "Do";
    const std::pair<const char*, const char*> kDiagonals[] = {
        {"North", "West"}, {"South", "West"}, {"North", "East"}, {"South", "East"}};
    for (const auto& [vertical, horizontal] : kDiagonals) {
      const std::string v = vertical, h = horizontal;
      std::string lower_h = h;
      lower_h[0] = static_cast<char>(std::tolower(lower_h[0]));
      const std::vector<std::string> choices = {"Move " + v, "Move " + h};
      for (const std::string& spelling : {v + " " + h, v + h, v + "-" + h, v + lower_h}) {
        rules.translations["Move " + spelling] = choices;
      }
    }
    for (const char* direction : {"North", "South", "East", "West"}) {
      const std::string move = std::string("Move ") + direction;
      for (const char* steps : {" 1 Step", " 2 Steps", " 3 Steps"}) rules.translations[move + steps] = {move};
    }
    for (const char* synonym : {"Collect Stone", "Mine Stone", "Chop Tree", "Chop", "Chop Trees", "Cut Tree",
                                "Chop_Tree", "Cut", "Collect Wood", "Drink", "Drink From Water", "Drink From Lakes",
                                "Mine", "Collect Coal", "Collect Iron", "Mine Coal", "Defeat Zombie",
                                "Defeat Skeleton", "Eat Cow", "Attack", "Collect Sapling"}) {
      rules.translations[synonym] = {"Do"};
    }
    rules.translations["Make Table"] = {"Place Table"};
    rules.translations["Make Crafting Table"] = {"Place Table"};
    rules.translations["Make Furnace"] = {"Place Furnace"};
    return rules;
  }();
  return kRules;
}

std::string CrafterEnv::instruction_prompt() const { return balrog_instruction_prompt(); }

TextObservation CrafterEnv::observe_text() const {
  require_reset();
  return {describe_long_term(world_, player_, config_.view), describe_short_term(player_)};
}

double CrafterEnv::progression() const {
  return static_cast<double>(std::count(unlocked_.begin(), unlocked_.end(), true)) / kNumAchievements;
}

std::vector<std::string> CrafterEnv::achievement_names() const {
  std::vector<std::string> names;
  for (int a = 0; a < kNumAchievements; ++a) names.emplace_back(achievement_name(a));
  return names;
}

std::vector<std::string> CrafterEnv::unlocked_achievements() const {
  std::vector<std::string> names;
  for (int a = 0; a < kNumAchievements; ++a)
    if (unlocked_[a]) names.emplace_back(achievement_name(a));
  return names;
}

std::vector<std::vector<std::string>> CrafterEnv::local_view(int radius) const {
  require_reset();
  const Pos center = player_pos();
  std::vector<std::vector<std::string>> rows;
  for (int y = center.y - radius; y <= center.y + radius; ++y) {
    std::vector<std::string>& row = rows.emplace_back();
    for (int x = center.x - radius; x <= center.x + radius; ++x) {
      const Pos p{x, y};
      if (!world_.inside(p)) {
        row.emplace_back("oob");
      } else if (const int slot = world_.object_at(p)) {
        row.emplace_back(kind_name(world_.object(slot).kind));
      } else {
        row.emplace_back(material_name(world_.material(p)));
      }
    }
  }
  return rows;
}

std::string CrafterEnv::render_ascii() const {
  require_reset();
  const Pos center = player_pos();
  const int rx = config_.view.x / 2, ry = config_.view.y / 2;
  std::string out;
  for (int y = center.y - ry; y <= center.y + ry; ++y) {
    for (int x = center.x - rx; x <= center.x + rx; ++x) out += cell_char(world_, {x, y}, player_);
    out += '\n';
  }
  out += "legend: ~water .grass #stone _path :sand Ttree %lava coal iron Diamond table furnace "
         "<>^v player (z asleep) Cow Zombie Skeleton *arrow plant\n";
  out += "step " + std::to_string(step_) + "  daylight " + std::to_string(world_.daylight).substr(0, 4) + "\n";
  out += describe_short_term(player_) + "\n";
  return out;
}

}  // namespace turnrl::envs::crafter
