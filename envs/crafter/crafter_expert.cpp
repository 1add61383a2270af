#include "envs/crafter/crafter_expert.h"

#include <array>
#include <cctype>
#include <functional>
#include <optional>
#include <random>
#include <vector>

#include "envs/crafter/balrog_text.h"

namespace turnrl::envs::crafter {
namespace {

/** A place or make action's aim: its name in lower case ("make wood pickaxe"). */
std::string aim_of(int action) {
  std::string text = balrog_actions()[static_cast<size_t>(action)].name;
  for (char& c : text) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return text;
}

constexpr std::array<Pos, 4> kMoves{{{-1, 0}, {1, 0}, {0, -1}, {0, 1}}};  // action::kMoveLeft + i
/** A table further than this many steps is not worth the walk: the expert places a new one. */
constexpr int kTableWalk = 12;
/** Vitals below these send the expert to water, a cow or to sleep before anything else. */
constexpr int kLowDrink = 4, kLowFood = 4, kLowEnergy = 3;
/** A searching expert turns at random once in this many free steps, so it does not walk a
 *  straight line forever across open grass. */
constexpr int kSearchTurnEvery = 8;

int move_action(Pos direction) {
  for (int i = 0; i < 4; ++i) {
    if (kMoves[i] == direction) return action::kMoveLeft + i;
  }
  return action::kNoop;
}

/** The first move of a shortest walk to a cell next to a target, or the direction to face when the
 *  expert already stands next to one. */
struct Route {
  bool adjacent = false;
  Pos direction;
  int steps = 0;
};

class Expert {
 public:
  Expert(const World& world, const Player& player, Pos view, uint64_t seed, ExpertSight sight)
      : world_(world),
        player_(player),
        pos_(world.object(World::kPlayerSlot).pos),
        window_(described_window(world, pos_, view)),
        sight_(sight),
        rng_(seed) {}

  ExpertMove act() {
    if (player_.sleeping) return {action::kNoop, "sleep"};
    for (const auto& goal : goals()) {
      if (std::optional<int> action = goal()) return {*action, aim_};
    }
    return {sight_ == ExpertSight::kView ? search() : wander(), "go"};
  }

 private:
  using Goal = std::function<std::optional<int>()>;

  std::vector<Goal> goals() {
    using namespace achievement;
    return {
        [&] { return fight(Kind::kZombie); },
        [&]() -> std::optional<int> {
          if (inventory(item::kEnergy) < kLowEnergy) return aim("sleep", action::kSleep);
          return std::nullopt;
        },
        [&] { return inventory(item::kDrink) < kLowDrink ? collect_from(Material::kWater) : std::nullopt; },
        [&] { return inventory(item::kFood) < kLowFood ? fight(Kind::kCow, true) : std::nullopt; },
        [&] { return unlocked(kPlaceTable) ? std::nullopt : place(action::kPlaceTable, 3); },
        [&] { return unlocked(kMakeWoodPickaxe) ? std::nullopt : make(action::kMakeWoodPickaxe); },
        [&] { return unlocked(kMakeWoodSword) ? std::nullopt : make(action::kMakeWoodSword); },
        [&] { return unlocked(kCollectDrink) ? std::nullopt : collect_from(Material::kWater); },
        [&] { return unlocked(kEatCow) ? std::nullopt : fight(Kind::kCow, true); },
        [&] { return unlocked(kCollectSapling) ? std::nullopt : collect_from(Material::kGrass); },
        [&] { return unlocked(kPlacePlant) ? std::nullopt : place(action::kPlacePlant, 0); },
        [&] { return unlocked(kPlaceStone) ? std::nullopt : place(action::kPlaceStone, 0); },
        [&] { return unlocked(kMakeStonePickaxe) ? std::nullopt : make(action::kMakeStonePickaxe); },
        [&] { return unlocked(kMakeStoneSword) ? std::nullopt : make(action::kMakeStoneSword); },
        [&] { return unlocked(kPlaceFurnace) ? std::nullopt : place_near_table(action::kPlaceFurnace); },
        [&] { return unlocked(kCollectCoal) ? std::nullopt : collect_from(Material::kCoal); },
        [&] { return unlocked(kCollectIron) ? std::nullopt : collect_from(Material::kIron); },
        [&] { return unlocked(kMakeIronPickaxe) ? std::nullopt : make(action::kMakeIronPickaxe); },
        [&] { return unlocked(kMakeIronSword) ? std::nullopt : make(action::kMakeIronSword); },
        [&] { return unlocked(kCollectDiamond) ? std::nullopt : collect_from(Material::kDiamond); },
        // Nothing left to unlock within reach: keep drink and food topped up.
        [&] { return inventory(item::kDrink) < kItemMax ? collect_from(Material::kWater) : std::nullopt; },
        [&] { return inventory(item::kFood) < kItemMax ? fight(Kind::kCow, true) : std::nullopt; },
    };
  }

  /** Names what `action` is for: the reply's reasoning before it (`{aim}` of a reply template). */
  std::optional<int> aim(std::string text, std::optional<int> action) {
    if (action) aim_ = std::move(text);
    return action;
  }

  int inventory(int item) const { return player_.inventory[item]; }
  bool unlocked(int achievement) const { return player_.achievements[achievement] > 0; }
  bool walkable(Pos p) const { return in_sight(p) && world_.is_free(p, kWalkable); }
  /** Whether the expert may read cell p: every cell with full sight, with view-bound sight those
   *  the prompt describes. */
  bool in_sight(Pos p) const { return sight_ == ExpertSight::kFull || window_.contains(p); }

  /** Breadth-first over free walkable cells (never lava) to the nearest cell next to a target. */
  std::optional<Route> route_to(const std::function<bool(Pos)>& seen_target) const {
    auto is_target = [&](Pos p) { return in_sight(p) && seen_target(p); };
    for (Pos d : kMoves) {
      if (is_target(pos_ + d)) return Route{true, d, 0};
    }
    const int width = world_.width(), height = world_.height();
    std::vector<int> first_move(static_cast<size_t>(width) * height, -1), steps(first_move.size(), 0);
    std::vector<Pos> queue;
    auto cell = [&](Pos p) { return static_cast<size_t>(p.x) * height + p.y; };
    for (int i = 0; i < 4; ++i) {
      const Pos next = pos_ + kMoves[i];
      if (!walkable(next) || first_move[cell(next)] >= 0) continue;
      first_move[cell(next)] = i;
      steps[cell(next)] = 1;
      queue.push_back(next);
    }
    for (size_t head = 0; head < queue.size(); ++head) {
      const Pos at = queue[head];
      for (Pos d : kMoves) {
        if (is_target(at + d)) return Route{false, kMoves[first_move[cell(at)]], steps[cell(at)]};
      }
      for (Pos d : kMoves) {
        const Pos next = at + d;
        if (!walkable(next) || first_move[cell(next)] >= 0) continue;
        first_move[cell(next)] = first_move[cell(at)];
        steps[cell(next)] = steps[cell(at)] + 1;
        queue.push_back(next);
      }
    }
    return std::nullopt;
  }

  /** Walks to a target and uses it (`do`); nothing when none can be reached. */
  std::optional<int> interact(const std::function<bool(Pos)>& is_target) const {
    const std::optional<Route> route = route_to(is_target);
    if (!route) return std::nullopt;
    if (route->adjacent && player_.facing == route->direction) return action::kDo;
    return move_action(route->direction);  // toward a blocked cell this only turns the expert
  }

  bool is_material(Pos p, Material material) const { return world_.inside(p) && world_.object_at(p) == 0 && world_.material(p) == material; }
  bool is_creature(Pos p, Kind kind) const {
    const int slot = world_.object_at(p);
    return slot != 0 && slot != World::kPlayerSlot && world_.object(slot).kind == kind;
  }

  /** Collects from the nearest cell of `material`, when the expert has the tool it needs. */
  std::optional<int> collect_from(Material material) {
    const CollectRule& rule = collect_rules()[static_cast<int>(material)];
    if (rule.require.item >= 0 && inventory(rule.require.item) < rule.require.amount) return std::nullopt;
    return aim("collect " + std::string(material_name(material)), interact([&](Pos p) { return is_material(p, material); }));
  }

  /** Attacks a creature next to the expert, or with `hunt` walks to the nearest one. */
  std::optional<int> fight(Kind kind, bool hunt = false) {
    const std::string target = "hit " + std::string(kind_name(kind));
    for (Pos d : kMoves) {
      if (is_creature(pos_ + d, kind)) return aim(target, player_.facing == d ? action::kDo : move_action(d));
    }
    if (!hunt) return std::nullopt;
    return aim(target, interact([&](Pos p) { return is_creature(p, kind); }));
  }

  /** Gathers what `item` is made from: the material it is collected from. */
  std::optional<int> gather(int item) {
    for (int m = 0; m < kNumMaterials; ++m) {
      const CollectRule& rule = collect_rules()[m];
      if (rule.exists && rule.receive == item) return collect_from(static_cast<Material>(m));
    }
    return std::nullopt;
  }

  /** Places `action`'s result in front, holding `spare` more of its material than it uses;
   *  gathers the material first, and steps aside when the cell in front does not take it. */
  std::optional<int> place(int action, int spare) {
    const PlaceRule& rule = *place_rule(action);
    if (inventory(rule.uses.item) < rule.uses.amount + spare) return gather(rule.uses.item);
    const Pos front = pos_ + player_.facing;
    if (world_.object_at(front) == 0 && contains(rule.where, world_.material(front))) return aim(aim_of(action), action);
    return aim(aim_of(action), wander());
  }

  /** Gathers the material first: a walk to the table for each piece would never end. */
  std::optional<int> place_near_table(int action) {
    const PlaceRule& rule = *place_rule(action);
    if (inventory(rule.uses.item) < rule.uses.amount) return gather(rule.uses.item);
    if (!world_.nearby_has(pos_, 1, Material::kTable)) {
      const std::optional<Route> route = route_to([&](Pos p) { return is_material(p, Material::kTable); });
      if (!route) return std::nullopt;
      return aim("go to table", move_action(route->direction));
    }
    return place(action, 0);
  }

  /** Makes a tool at a table (and furnace), gathering what it lacks and placing a table when the
   *  nearest is too far. */
  std::optional<int> make(int action) {
    const MakeRule& rule = *make_rule(action);
    for (const ItemAmount& cost : rule.uses) {
      if (cost.item >= 0 && inventory(cost.item) < cost.amount) return gather(cost.item);
    }
    const bool at_table = world_.nearby_has(pos_, 1, Material::kTable);
    const bool at_furnace = !rule.needs_furnace || world_.nearby_has(pos_, 1, Material::kFurnace);
    if (at_table && at_furnace) return aim(aim_of(action), action);
    if (at_table) return place(action::kPlaceFurnace, 0);
    const std::optional<Route> route = route_to([&](Pos p) { return is_material(p, Material::kTable); });
    if (route && route->steps <= kTableWalk) return aim("go to table", move_action(route->direction));
    return place(action::kPlaceTable, 0);
  }

  /** Straight on while the cell in front is free, else (and now and then) a random turn. */
  int search() {
    const Pos front = pos_ + player_.facing;
    if (walkable(front) && std::uniform_int_distribution<int>(0, kSearchTurnEvery - 1)(rng_) != 0) return move_action(player_.facing);
    return wander();
  }

  /** A random move that never steps into lava. */
  int wander() {
    std::array<Pos, 4> safe;
    int count = 0;
    for (Pos d : kMoves) {
      if (world_.material(pos_ + d) != Material::kLava) safe[count++] = d;
    }
    if (count == 0) return action::kNoop;
    return move_action(safe[std::uniform_int_distribution<int>(0, count - 1)(rng_)]);
  }

  const World& world_;
  const Player& player_;
  Pos pos_;
  DescribedWindow window_;
  ExpertSight sight_;
  std::mt19937_64 rng_;
  std::string aim_;  // what the last action chosen is for
};

}  // namespace

ExpertMove expert_move(const World& world, const Player& player, Pos view, uint64_t seed, ExpertSight sight) {
  return Expert(world, player, view, seed, sight).act();
}

ExpertMove expert_move(const CrafterEnv& env, uint64_t seed, ExpertSight sight) {
  return expert_move(env.world(), env.player(), env.config().view, seed, sight);
}

}  // namespace turnrl::envs::crafter
