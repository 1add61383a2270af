#include "envs/crafter/objects.h"

#include <algorithm>

namespace turnrl::envs::crafter {
namespace {

constexpr Pos kDirections[] = {{-1, 0}, {1, 0}, {0, -1}, {0, 1}};

int sign(int v) { return (v > 0) - (v < 0); }

/** Object.move: returns whether the target was free, even for a removed object (which stays). */
bool move(World& world, int slot, Pos direction, MaterialSet walkable = kWalkable) {
  const Pos target = world.object(slot).pos + direction;
  if (!world.is_free(target, walkable)) return false;
  world.move(slot, target);
  return true;
}

/** Object.toward: one step along the long axis (ties: y), or the short one (ties: x). */
Pos toward(Pos from, Pos to, bool long_axis) {
  const int dx = to.x - from.x, dy = to.y - from.y;
  const bool use_x = long_axis ? std::abs(dx) > std::abs(dy) : std::abs(dx) <= std::abs(dy);
  return use_x ? Pos{sign(dx), 0} : Pos{0, sign(dy)};
}

Pos random_dir(World& world) { return kDirections[world.random.randint(0, 4)]; }

/** Arrows damage whatever they hit; the player's health lives in its inventory. */
void hurt(World& world, Player& player, int slot, int damage) {
  if (slot == World::kPlayerSlot) {
    player.set_health(player.health() - damage);
  } else {
    Object& obj = world.object(slot);
    obj.health = std::max(0, obj.health - damage);
  }
}

void update_cow(World& world, int slot) {
  if (world.object(slot).health <= 0) world.remove(slot);
  if (world.random.uniform() < 0.5) move(world, slot, random_dir(world));
}

void update_zombie(World& world, Player& player, int slot) {
  if (world.object(slot).health <= 0) world.remove(slot);
  const Pos player_pos = world.object(World::kPlayerSlot).pos;
  const int dist = distance(world.object(slot).pos, player_pos);
  if (dist <= 8 && world.random.uniform() < 0.9) {
    const bool long_axis = world.random.uniform() < 0.8;
    move(world, slot, toward(world.object(slot).pos, player_pos, long_axis));
  } else {
    move(world, slot, random_dir(world));
  }
  Object& self = world.object(slot);
  if (distance(self.pos, player_pos) <= 1) {
    if (self.cooldown) {
      self.cooldown -= 1;
    } else {
      player.set_health(player.health() - (player.sleeping ? 7 : 2));
      self.cooldown = 5;
    }
  }
}

void update_skeleton(World& world, int slot) {
  if (world.object(slot).health <= 0) world.remove(slot);
  Object& self = world.object(slot);
  self.reload = std::max(0, self.reload - 1);
  const Pos player_pos = world.object(World::kPlayerSlot).pos;
  const int dist = distance(self.pos, player_pos);
  RandomState& random = world.random;
  if (dist <= 3) {
    const Pos away = toward(self.pos, player_pos, random.uniform() < 0.6);
    if (move(world, slot, Pos{-away.x, -away.y})) return;
  }
  if (dist <= 5 && random.uniform() < 0.5) {
    const Pos direction = toward(world.object(slot).pos, player_pos, true);
    Object& shooter = world.object(slot);
    if (shooter.reload > 0 || (direction.x == 0 && direction.y == 0)) return;
    const Pos target = shooter.pos + direction;
    if (world.is_free(target, kArrowWalkable)) {
      shooter.reload = 4;
      Object arrow;
      arrow.kind = Kind::kArrow;
      arrow.pos = target;
      arrow.facing = direction;
      world.add(arrow);  // may reallocate: no references to objects past this line
    }
  } else if (dist <= 8 && random.uniform() < 0.3) {
    const bool long_axis = random.uniform() < 0.6;
    move(world, slot, toward(world.object(slot).pos, player_pos, long_axis));
  } else if (random.uniform() < 0.2) {
    move(world, slot, random_dir(world));
  }
}

void update_arrow(World& world, Player& player, int slot) {
  const Object& self = world.object(slot);
  const Pos target = self.pos + self.facing;
  const Material material = world.material(target);
  if (const int hit = world.object_at(target)) {
    hurt(world, player, hit, 2);
    world.remove(slot);
  } else if (!contains(kArrowWalkable, material)) {
    world.remove(slot);
    if (material == Material::kTable || material == Material::kFurnace) world.set_material(target, Material::kPath);
  } else {
    move(world, slot, self.facing, kArrowWalkable);
  }
}

void update_plant(World& world, int slot) {
  Object& self = world.object(slot);
  self.grown += 1;
  for (const Pos dir : kDirections) {
    const int neighbour = world.object_at(self.pos + dir);
    if (!neighbour) continue;
    const Kind kind = world.object(neighbour).kind;
    if (kind == Kind::kZombie || kind == Kind::kSkeleton || kind == Kind::kCow) {
      self.health = std::max(0, self.health - 1);
      break;
    }
  }
  if (self.health <= 0) world.remove(slot);
}

}  // namespace

void update_object(World& world, Player& player, int slot) {
  switch (world.object(slot).kind) {
    case Kind::kCow: update_cow(world, slot); break;
    case Kind::kZombie: update_zombie(world, player, slot); break;
    case Kind::kSkeleton: update_skeleton(world, slot); break;
    case Kind::kArrow: update_arrow(world, player, slot); break;
    case Kind::kPlant: update_plant(world, slot); break;
    case Kind::kPlayer: break;
  }
}

}  // namespace turnrl::envs::crafter
