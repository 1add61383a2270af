#include "envs/crafter/player.h"

#include <algorithm>

namespace turnrl::envs::crafter {
namespace {

constexpr Pos kMoveDirections[] = {{-1, 0}, {1, 0}, {0, -1}, {0, 1}};

bool has(const Player& player, ItemAmount cost) { return cost.item < 0 || player.inventory[cost.item] >= cost.amount; }

/** Damage to a creature (objects.Object.health setter clamps at 0). */
void hurt(Object& obj, int damage) { obj.health = std::max(0, obj.health - damage); }

void do_object(Player& player, Object& obj) {
  const auto& inv = player.inventory;
  int damage = 1;
  if (inv[item::kWoodSword]) damage = std::max(damage, 2);
  if (inv[item::kStoneSword]) damage = std::max(damage, 3);
  if (inv[item::kIronSword]) damage = std::max(damage, 5);
  switch (obj.kind) {
    case Kind::kPlant:
      if (obj.grown > 300) {
        obj.grown = 0;
        player.inventory[item::kFood] += 4;
        ++player.achievements[achievement::kEatPlant];
      }
      break;
    case Kind::kZombie:
      hurt(obj, damage);
      if (obj.health <= 0) ++player.achievements[achievement::kDefeatZombie];
      break;
    case Kind::kSkeleton:
      hurt(obj, damage);
      if (obj.health <= 0) ++player.achievements[achievement::kDefeatSkeleton];
      break;
    case Kind::kCow:
      hurt(obj, damage);
      if (obj.health <= 0) {
        player.inventory[item::kFood] += 6;
        ++player.achievements[achievement::kEatCow];
        player.hunger = 0;
      }
      break;
    default:
      break;
  }
}

void do_material(World& world, Player& player, Pos target, Material material) {
  if (material == Material::kWater) player.thirst = 0;
  const CollectRule& rule = collect_rules()[static_cast<int>(material)];
  if (!rule.exists || !has(player, rule.require)) return;
  world.set_material(target, rule.leaves);
  if (world.random.uniform() <= rule.probability) {
    player.inventory[rule.receive] += 1;
    ++player.achievements[rule.achievement];
  }
}

void place(World& world, Player& player, const PlaceRule& rule, Pos target, Material material) {
  if (world.object_at(target)) return;
  if (!contains(rule.where, material) || !has(player, rule.uses)) return;
  player.inventory[rule.uses.item] -= rule.uses.amount;
  if (rule.result != Material::kNone) {
    world.set_material(target, rule.result);
  } else {
    Object plant;
    plant.kind = Kind::kPlant;
    plant.pos = target;
    plant.health = 1;
    world.add(plant);
  }
  ++player.achievements[rule.achievement];
}

void make(const World& world, Player& player, const MakeRule& rule, Pos pos) {
  if (!world.nearby_has(pos, 1, Material::kTable)) return;
  if (rule.needs_furnace && !world.nearby_has(pos, 1, Material::kFurnace)) return;
  for (const ItemAmount& cost : rule.uses) {
    if (!has(player, cost)) return;
  }
  for (const ItemAmount& cost : rule.uses) {
    if (cost.item >= 0) player.inventory[cost.item] -= cost.amount;
  }
  player.inventory[rule.gives] += 1;
  ++player.achievements[rule.achievement];
}

void update_life_stats(Player& player) {
  auto& inv = player.inventory;
  player.hunger += player.sleeping ? 0.5 : 1;
  if (player.hunger > 25) {
    player.hunger = 0;
    inv[item::kFood] -= 1;
  }
  player.thirst += player.sleeping ? 0.5 : 1;
  if (player.thirst > 20) {
    player.thirst = 0;
    inv[item::kDrink] -= 1;
  }
  if (player.sleeping) {
    player.fatigue = std::min(player.fatigue - 1, 0.0);
  } else {
    player.fatigue += 1;
  }
  if (player.fatigue < -10) {
    player.fatigue = 0;
    inv[item::kEnergy] += 1;
  }
  if (player.fatigue > 30) {
    player.fatigue = 0;
    inv[item::kEnergy] -= 1;
  }
}

void degen_or_regen_health(Player& player) {
  const auto& inv = player.inventory;
  const bool necessities = inv[item::kFood] > 0 && inv[item::kDrink] > 0 && (inv[item::kEnergy] > 0 || player.sleeping);
  if (necessities) {
    player.recover += player.sleeping ? 2 : 1;
  } else {
    player.recover -= player.sleeping ? 0.5 : 1;
  }
  if (player.recover > 25) {
    player.recover = 0;
    player.set_health(player.health() + 1);
  }
  if (player.recover < -15) {
    player.recover = 0;
    player.set_health(player.health() - 1);
  }
}

}  // namespace

void Player::reset() {
  *this = Player{};
  for (int vital : {item::kHealth, item::kFood, item::kDrink, item::kEnergy}) inventory[vital] = kItemMax;
  last_health = kItemMax;
}

void update_player(World& world, Player& player) {
  Object& self = world.object(World::kPlayerSlot);
  const Pos target = self.pos + player.facing;
  const Material material = world.material(target);
  const int target_slot = world.object_at(target);
  int action = player.action;
  if (player.sleeping) {
    if (player.inventory[item::kEnergy] < kItemMax) {
      action = action::kSleep;
    } else {
      player.sleeping = false;
      ++player.achievements[achievement::kWakeUp];
    }
  }
  if (action >= action::kMoveLeft && action <= action::kMoveDown) {
    player.facing = kMoveDirections[action - action::kMoveLeft];
    const Pos next = self.pos + player.facing;
    if (world.is_free(next, kPlayerWalkable)) world.move(World::kPlayerSlot, next);
    if (world.material(self.pos) == Material::kLava) player.set_health(0);
  } else if (action == action::kDo) {
    if (target_slot) {
      if (target_slot != World::kPlayerSlot) do_object(player, world.object(target_slot));
    } else {
      do_material(world, player, target, material);
    }
  } else if (action == action::kSleep) {
    if (player.inventory[item::kEnergy] < kItemMax) player.sleeping = true;
  } else if (const PlaceRule* rule = place_rule(action)) {
    place(world, player, *rule, target, material);
  } else if (const MakeRule* rule = make_rule(action)) {
    make(world, player, *rule, self.pos);
  }
  update_life_stats(player);
  degen_or_regen_health(player);
  for (int& amount : player.inventory) amount = std::clamp(amount, 0, kItemMax);
  if (player.health() < player.last_health) player.sleeping = false;
  player.last_health = player.health();
}

}  // namespace turnrl::envs::crafter
