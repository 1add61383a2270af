#pragma once
// Crafter's data table (crafter/data.yaml): materials, items, actions, achievements and the
// collect / place / make rules, as compile-time tables.
#include <array>
#include <cstdint>
#include <string_view>

namespace turnrl::envs::crafter {

/** Material ids as in the semantic map (0 = none / outside the map). */
enum class Material : uint8_t { kNone, kWater, kGrass, kStone, kPath, kSand, kTree, kLava, kCoal, kIron, kDiamond, kTable, kFurnace };
constexpr int kNumMaterials = 13;

/** Object kinds; the semantic id is kNumMaterials + kind. */
enum class Kind : uint8_t { kPlayer, kCow, kZombie, kSkeleton, kArrow, kPlant };
constexpr int kNumKinds = 6;

namespace item {
enum Id : int {
  kHealth, kFood, kDrink, kEnergy, kSapling, kWood, kStone, kCoal, kIron, kDiamond,
  kWoodPickaxe, kStonePickaxe, kIronPickaxe, kWoodSword, kStoneSword, kIronSword,
};
}  // namespace item
constexpr int kNumItems = 16;
constexpr int kItemMax = 9;

/** Alphabetical, as data.yaml lists them. */
namespace achievement {
enum Id : int {
  kCollectCoal, kCollectDiamond, kCollectDrink, kCollectIron, kCollectSapling, kCollectStone,
  kCollectWood, kDefeatSkeleton, kDefeatZombie, kEatCow, kEatPlant, kMakeIronPickaxe,
  kMakeIronSword, kMakeStonePickaxe, kMakeStoneSword, kMakeWoodPickaxe, kMakeWoodSword,
  kPlaceFurnace, kPlacePlant, kPlaceStone, kPlaceTable, kWakeUp,
};
}  // namespace achievement
constexpr int kNumAchievements = 22;

namespace action {
enum Id : int {
  kNoop, kMoveLeft, kMoveRight, kMoveUp, kMoveDown, kDo, kSleep, kPlaceStone, kPlaceTable,
  kPlaceFurnace, kPlacePlant, kMakeWoodPickaxe, kMakeStonePickaxe, kMakeIronPickaxe,
  kMakeWoodSword, kMakeStoneSword, kMakeIronSword,
};
}  // namespace action
constexpr int kNumActions = 17;

std::string_view material_name(Material material);  // "none" for kNone
std::string_view kind_name(Kind kind);               // lower-case class name: "cow"
std::string_view item_name(int item);
std::string_view achievement_name(int achievement);
std::string_view action_name(int action);

/** A set of materials as a bit mask. */
using MaterialSet = uint16_t;
constexpr MaterialSet material_bit(Material m) { return MaterialSet(1u << static_cast<int>(m)); }
constexpr bool contains(MaterialSet set, Material m) { return (set & material_bit(m)) != 0; }

constexpr MaterialSet kWalkable = material_bit(Material::kGrass) | material_bit(Material::kSand) | material_bit(Material::kPath);
constexpr MaterialSet kPlayerWalkable = kWalkable | material_bit(Material::kLava);
constexpr MaterialSet kArrowWalkable = kWalkable | material_bit(Material::kWater) | material_bit(Material::kLava);

struct ItemAmount {
  int item = -1;  // -1: unused entry
  int amount = 0;
};

struct CollectRule {
  bool exists = false;
  ItemAmount require;
  int receive = -1;  // item
  Material leaves = Material::kNone;
  double probability = 1.0;
  int achievement = -1;
};
/** Indexed by material. */
const std::array<CollectRule, kNumMaterials>& collect_rules();

struct PlaceRule {
  ItemAmount uses;
  MaterialSet where = 0;
  Material result = Material::kNone;  // kNone: a Plant object
  int achievement = -1;
};
/** The place rule of a place_* action, or nullptr. */
const PlaceRule* place_rule(int action);

struct MakeRule {
  std::array<ItemAmount, 3> uses;
  bool needs_furnace = false;  // every make rule needs a table
  int gives = -1;              // item
  int achievement = -1;
};
/** The make rule of a make_* action, or nullptr. */
const MakeRule* make_rule(int action);

}  // namespace turnrl::envs::crafter
