#include "envs/crafter/worldgen.h"

#include <cmath>
#include <initializer_list>
#include <utility>
#include <vector>

#include "envs/crafter/opensimplex.h"

namespace turnrl::envs::crafter {
namespace {

/** worldgen._simplex: weighted octaves (x and y scaled by each size, z not), optionally normalised. */
class Noise {
 public:
  explicit Noise(int64_t seed) : simplex_(seed) {}

  double operator()(double x, double y, double z, std::initializer_list<std::pair<int, double>> sizes,
                    bool normalize = true) const {
    double value = 0;
    double weights = 0;
    for (const auto& [size, weight] : sizes) {
      value += weight * simplex_.noise3(x / size, y / size, z);
      weights += weight;
    }
    if (normalize) value /= weights;
    return value;
  }
  double operator()(double x, double y, double z, int size) const { return (*this)(x, y, z, {{size, 1.0}}); }

 private:
  OpenSimplex simplex_;
};

Material terrain(World& world, const Noise& noise, int x, int y, Pos player, bool& tunnel) {
  RandomState& random = world.random;
  const int dx = x - player.x, dy = y - player.y;
  double start = 4 - std::sqrt(static_cast<double>(dx * dx + dy * dy));
  start += 2 * noise(x, y, 8, 3);
  start = 1 / (1 + std::exp(-start));
  double water = noise(x, y, 3, {{15, 1.0}, {5, 0.15}}, false) + 0.1;
  water -= 2 * start;
  double mountain = noise(x, y, 0, {{15, 1.0}, {5, 0.3}});
  mountain -= 4 * start + 0.3 * water;
  if (start > 0.5) return Material::kGrass;
  if (mountain > 0.15) {
    if (noise(x, y, 6, 7) > 0.15 && mountain > 0.3) return Material::kPath;
    if (noise(2 * x, y / 5.0, 7, 3) > 0.4 || noise(x / 5.0, 2 * y, 7, 3) > 0.4) {
      tunnel = true;
      return Material::kPath;
    }
    if (noise(x, y, 1, 8) > 0 && random.uniform() > 0.85) return Material::kCoal;
    if (noise(x, y, 2, 6) > 0.4 && random.uniform() > 0.75) return Material::kIron;
    if (mountain > 0.18 && random.uniform() > 0.994) return Material::kDiamond;
    if (mountain > 0.3 && noise(x, y, 6, 5) > 0.35) return Material::kLava;
    return Material::kStone;
  }
  if (0.25 < water && water <= 0.35 && noise(x, y, 4, 9) > -0.2) return Material::kSand;
  if (0.3 < water) return Material::kWater;
  if (noise(x, y, 5, 7) > 0 && random.uniform() > 0.8) return Material::kTree;
  return Material::kGrass;
}

void place_creature(World& world, int x, int y, Pos player, bool tunnel) {
  const Material material = world.material({x, y});
  if (!contains(kWalkable, material)) return;
  RandomState& random = world.random;
  const int dx = x - player.x, dy = y - player.y;
  const double dist = std::sqrt(static_cast<double>(dx * dx + dy * dy));
  Object creature;
  creature.pos = {x, y};
  if (dist > 3 && material == Material::kGrass && random.uniform() > 0.985) {
    creature.kind = Kind::kCow;
    creature.health = 3;
  } else if (dist > 10 && random.uniform() > 0.993) {
    creature.kind = Kind::kZombie;
    creature.health = 5;
  } else if (material == Material::kPath && tunnel && random.uniform() > 0.95) {
    creature.kind = Kind::kSkeleton;
    creature.health = 3;
  } else {
    return;
  }
  world.add(creature);
}

}  // namespace

void generate_world(World& world, Pos player) {
  const Noise noise(world.random.randint(0, (int64_t{1} << 31) - 1));
  std::vector<uint8_t> tunnels(static_cast<size_t>(world.width()) * world.height(), 0);
  for (int x = 0; x < world.width(); ++x) {
    for (int y = 0; y < world.height(); ++y) {
      bool tunnel = false;
      world.set_material({x, y}, terrain(world, noise, x, y, player, tunnel));
      tunnels[x * world.height() + y] = tunnel;
    }
  }
  for (int x = 0; x < world.width(); ++x) {
    for (int y = 0; y < world.height(); ++y) place_creature(world, x, y, player, tunnels[x * world.height() + y]);
  }
}

}  // namespace turnrl::envs::crafter
