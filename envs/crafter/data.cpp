#include "envs/crafter/data.h"

namespace turnrl::envs::crafter {
namespace {

constexpr std::array<std::string_view, kNumMaterials> kMaterialNames = {
    "none", "water", "grass", "stone", "path", "sand", "tree", "lava", "coal", "iron", "diamond", "table", "furnace"};
constexpr std::array<std::string_view, kNumKinds> kKindNames = {"player", "cow", "zombie", "skeleton", "arrow", "plant"};
constexpr std::array<std::string_view, kNumItems> kItemNames = {
    "health", "food", "drink", "energy", "sapling", "wood", "stone", "coal", "iron", "diamond",
    "wood_pickaxe", "stone_pickaxe", "iron_pickaxe", "wood_sword", "stone_sword", "iron_sword"};
constexpr std::array<std::string_view, kNumAchievements> kAchievementNames = {
    "collect_coal", "collect_diamond", "collect_drink", "collect_iron", "collect_sapling", "collect_stone",
    "collect_wood", "defeat_skeleton", "defeat_zombie", "eat_cow", "eat_plant", "make_iron_pickaxe",
    "make_iron_sword", "make_stone_pickaxe", "make_stone_sword", "make_wood_pickaxe", "make_wood_sword",
    "place_furnace", "place_plant", "place_stone", "place_table", "wake_up"};
constexpr std::array<std::string_view, kNumActions> kActionNames = {
    "noop", "move_left", "move_right", "move_up", "move_down", "do", "sleep", "place_stone", "place_table",
    "place_furnace", "place_plant", "make_wood_pickaxe", "make_stone_pickaxe", "make_iron_pickaxe",
    "make_wood_sword", "make_stone_sword", "make_iron_sword"};

CollectRule collect(ItemAmount require, int receive, Material leaves, int achievement, double probability = 1.0) {
  return CollectRule{true, require, receive, leaves, probability, achievement};
}

}  // namespace

std::string_view material_name(Material material) { return kMaterialNames[static_cast<int>(material)]; }
std::string_view kind_name(Kind kind) { return kKindNames[static_cast<int>(kind)]; }
std::string_view item_name(int item) { return kItemNames.at(item); }
std::string_view achievement_name(int achievement) { return kAchievementNames.at(achievement); }
std::string_view action_name(int action) { return kActionNames.at(action); }

const std::array<CollectRule, kNumMaterials>& collect_rules() {
  static const std::array<CollectRule, kNumMaterials> rules = [] {
    using M = Material;
    std::array<CollectRule, kNumMaterials> r{};
    r[int(M::kTree)] = collect({}, item::kWood, M::kGrass, achievement::kCollectWood);
    r[int(M::kStone)] = collect({item::kWoodPickaxe, 1}, item::kStone, M::kPath, achievement::kCollectStone);
    r[int(M::kCoal)] = collect({item::kWoodPickaxe, 1}, item::kCoal, M::kPath, achievement::kCollectCoal);
    r[int(M::kIron)] = collect({item::kStonePickaxe, 1}, item::kIron, M::kPath, achievement::kCollectIron);
    r[int(M::kDiamond)] = collect({item::kIronPickaxe, 1}, item::kDiamond, M::kPath, achievement::kCollectDiamond);
    r[int(M::kWater)] = collect({}, item::kDrink, M::kWater, achievement::kCollectDrink);
    r[int(M::kGrass)] = collect({}, item::kSapling, M::kGrass, achievement::kCollectSapling, 0.1);
    return r;
  }();
  return rules;
}

const PlaceRule* place_rule(int action) {
  using M = Material;
  constexpr MaterialSet kGround = material_bit(M::kGrass) | material_bit(M::kSand) | material_bit(M::kPath);
  static const PlaceRule kStone{{item::kStone, 1}, kGround | material_bit(M::kWater) | material_bit(M::kLava), M::kStone,
                                achievement::kPlaceStone};
  static const PlaceRule kTable{{item::kWood, 2}, kGround, M::kTable, achievement::kPlaceTable};
  static const PlaceRule kFurnace{{item::kStone, 4}, kGround, M::kFurnace, achievement::kPlaceFurnace};
  static const PlaceRule kPlant{{item::kSapling, 1}, material_bit(M::kGrass), M::kNone, achievement::kPlacePlant};
  switch (action) {
    case action::kPlaceStone: return &kStone;
    case action::kPlaceTable: return &kTable;
    case action::kPlaceFurnace: return &kFurnace;
    case action::kPlacePlant: return &kPlant;
    default: return nullptr;
  }
}

const MakeRule* make_rule(int action) {
  static const MakeRule kWoodPickaxe{{{{item::kWood, 1}}}, false, item::kWoodPickaxe, achievement::kMakeWoodPickaxe};
  static const MakeRule kStonePickaxe{
      {{{item::kWood, 1}, {item::kStone, 1}}}, false, item::kStonePickaxe, achievement::kMakeStonePickaxe};
  static const MakeRule kIronPickaxe{{{{item::kWood, 1}, {item::kCoal, 1}, {item::kIron, 1}}}, true,
                                     item::kIronPickaxe, achievement::kMakeIronPickaxe};
  static const MakeRule kWoodSword{{{{item::kWood, 1}}}, false, item::kWoodSword, achievement::kMakeWoodSword};
  static const MakeRule kStoneSword{
      {{{item::kWood, 1}, {item::kStone, 1}}}, false, item::kStoneSword, achievement::kMakeStoneSword};
  static const MakeRule kIronSword{{{{item::kWood, 1}, {item::kCoal, 1}, {item::kIron, 1}}}, true, item::kIronSword,
                                   achievement::kMakeIronSword};
  switch (action) {
    case action::kMakeWoodPickaxe: return &kWoodPickaxe;
    case action::kMakeStonePickaxe: return &kStonePickaxe;
    case action::kMakeIronPickaxe: return &kIronPickaxe;
    case action::kMakeWoodSword: return &kWoodSword;
    case action::kMakeStoneSword: return &kStoneSword;
    case action::kMakeIronSword: return &kIronSword;
    default: return nullptr;
  }
}

}  // namespace turnrl::envs::crafter
