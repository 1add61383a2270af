#include "envs/crafter/worldgen.h"

#include <cmath>
#include <initializer_list>
#include <limits>
#include <utility>
#include <vector>

#include "envs/crafter/opensimplex.h"

namespace turnrl::envs::crafter {
namespace {

/** worldgen._simplex's weighted sum of octaves, optionally normalised (same order of operations). */
double combine(std::initializer_list<std::pair<double, double>> weighted_octaves, bool normalize) {
  double value = 0;
  double weights = 0;
  for (const auto& [weight, octave] : weighted_octaves) {
    value += weight * octave;
    weights += weight;
  }
  if (normalize) value /= weights;
  return value;
}

/** A coordinate as worldgen passes it to _simplex: the cell index times `multiplier` over `divisor`. */
struct Coordinate {
  double multiplier = 1;
  double divisor = 1;
  double operator()(int cell) const { return cell * multiplier / divisor; }  // x1 and /1 are exact
};

/**
 * One octave of worldgen._simplex over the area, noise3(x / size, y / size, z), cached per cell.
 * Noise is pure, so cells can be computed in any order: `prefetch` computes the cells a rule will
 * read in one batch, which OpenSimplex evaluates about twice as fast per point as one call per cell.
 */
class OctaveField {
 public:
  OctaveField(const OpenSimplex& simplex, int width, int height, double z, int size, Coordinate x = {},
              Coordinate y = {})
      : simplex_(simplex), height_(height), z_(z), size_(size), x_(x), y_(y),
        values_(static_cast<size_t>(width) * height, std::numeric_limits<double>::quiet_NaN()) {}

  double at(Pos p) {
    double& value = values_[static_cast<size_t>(p.x) * height_ + p.y];
    if (std::isnan(value)) value = simplex_.noise3(x_(p.x) / size_, y_(p.y) / size_, z_);
    return value;
  }

  void prefetch(const std::vector<Pos>& cells) {
    std::vector<double> xs(cells.size()), ys(cells.size()), zs(cells.size(), z_), noise(cells.size());
    for (size_t i = 0; i < cells.size(); ++i) {
      xs[i] = x_(cells[i].x) / size_;
      ys[i] = y_(cells[i].y) / size_;
    }
    simplex_.noise3(xs, ys, zs, noise);
    for (size_t i = 0; i < cells.size(); ++i) values_[static_cast<size_t>(cells[i].x) * height_ + cells[i].y] = noise[i];
  }

 private:
  const OpenSimplex& simplex_;
  int height_;
  double z_;
  int size_;
  Coordinate x_, y_;
  std::vector<double> values_;
};

/** Every octave the terrain rules read, named after what it decides. */
struct TerrainNoise {
  TerrainNoise(const OpenSimplex& simplex, int width, int height)
      : start(simplex, width, height, 8, 3),
        water_15(simplex, width, height, 3, 15),
        water_5(simplex, width, height, 3, 5),
        mountain_15(simplex, width, height, 0, 15),
        mountain_5(simplex, width, height, 0, 5),
        cave(simplex, width, height, 6, 7),
        horizontal_tunnel(simplex, width, height, 7, 3, {2, 1}, {1, 5}),
        vertical_tunnel(simplex, width, height, 7, 3, {1, 5}, {2, 1}),
        coal(simplex, width, height, 1, 8),
        iron(simplex, width, height, 2, 6),
        lava(simplex, width, height, 6, 5),
        sand(simplex, width, height, 4, 9),
        tree(simplex, width, height, 5, 7) {}

  OctaveField start, water_15, water_5, mountain_15, mountain_5, cave, horizontal_tunnel, vertical_tunnel, coal,
      iron, lava, sand, tree;
};

/** The three smooth quantities every cell's material derives from. Single-octave noise is used as is:
 *  _simplex's sum over one octave with weight 1 returns it unchanged. */
struct Climate {
  double start, water, mountain;
};

Climate climate(TerrainNoise& noise, int x, int y, Pos player) {
  const int dx = x - player.x, dy = y - player.y;
  double start = 4 - std::sqrt(static_cast<double>(dx * dx + dy * dy));
  start += 2 * noise.start.at({x, y});
  start = 1 / (1 + std::exp(-start));
  double water = combine({{1.0, noise.water_15.at({x, y})}, {0.15, noise.water_5.at({x, y})}}, false) + 0.1;
  water -= 2 * start;
  double mountain = combine({{1.0, noise.mountain_15.at({x, y})}, {0.3, noise.mountain_5.at({x, y})}}, true);
  mountain -= 4 * start + 0.3 * water;
  return {start, water, mountain};
}

Material terrain(World& world, TerrainNoise& noise, const Climate& c, int x, int y, bool& tunnel) {
  RandomState& random = world.random;
  if (c.start > 0.5) return Material::kGrass;
  if (c.mountain > 0.15) {
    if (noise.cave.at({x, y}) > 0.15 && c.mountain > 0.3) return Material::kPath;
    if (noise.horizontal_tunnel.at({x, y}) > 0.4 || noise.vertical_tunnel.at({x, y}) > 0.4) {
      tunnel = true;
      return Material::kPath;
    }
    if (noise.coal.at({x, y}) > 0 && random.uniform() > 0.85) return Material::kCoal;
    if (noise.iron.at({x, y}) > 0.4 && random.uniform() > 0.75) return Material::kIron;
    if (c.mountain > 0.18 && random.uniform() > 0.994) return Material::kDiamond;
    if (c.mountain > 0.3 && noise.lava.at({x, y}) > 0.35) return Material::kLava;
    return Material::kStone;
  }
  if (0.25 < c.water && c.water <= 0.35 && noise.sand.at({x, y}) > -0.2) return Material::kSand;
  if (0.3 < c.water) return Material::kWater;
  if (noise.tree.at({x, y}) > 0 && random.uniform() > 0.8) return Material::kTree;
  return Material::kGrass;
}

/** The cells of `cells` that `keep` keeps. */
template <class Keep>
std::vector<Pos> filter(const std::vector<Pos>& cells, Keep keep) {
  std::vector<Pos> kept;
  kept.reserve(cells.size());
  for (Pos p : cells)
    if (keep(p)) kept.push_back(p);
  return kept;
}

/**
 * Computes, field by field, the octaves `terrain` will read: the cells that reach each rule, found
 * by filtering the cells of the rule before. Past a random draw the sets over-approximate (a cell
 * whose coal draw succeeds reads no iron); a cell left out would be computed on demand.
 */
void prefetch_noise(TerrainNoise& noise, const std::vector<Climate>& climates, int width, int height) {
  const auto climate_at = [&](Pos p) -> const Climate& { return climates[static_cast<size_t>(p.x) * height + p.y]; };
  std::vector<Pos> mountain, lowland;
  for (int x = 0; x < width; ++x) {
    for (int y = 0; y < height; ++y) {
      const Climate& c = climate_at({x, y});
      if (c.start > 0.5) continue;
      (c.mountain > 0.15 ? mountain : lowland).push_back({x, y});
    }
  }
  noise.cave.prefetch(mountain);
  const auto not_cave =
      filter(mountain, [&](Pos p) { return !(noise.cave.at(p) > 0.15 && climate_at(p).mountain > 0.3); });
  noise.horizontal_tunnel.prefetch(not_cave);
  const auto no_horizontal = filter(not_cave, [&](Pos p) { return !(noise.horizontal_tunnel.at(p) > 0.4); });
  noise.vertical_tunnel.prefetch(no_horizontal);
  const auto ore = filter(no_horizontal, [&](Pos p) { return !(noise.vertical_tunnel.at(p) > 0.4); });
  noise.coal.prefetch(ore);
  noise.iron.prefetch(ore);
  noise.lava.prefetch(filter(ore, [&](Pos p) { return climate_at(p).mountain > 0.3; }));
  noise.sand.prefetch(
      filter(lowland, [&](Pos p) { return 0.25 < climate_at(p).water && climate_at(p).water <= 0.35; }));
  noise.tree.prefetch(filter(lowland, [&](Pos p) { return climate_at(p).water <= 0.35; }));
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
  const int width = world.width(), height = world.height();
  const OpenSimplex simplex(world.random.randint(0, (int64_t{1} << 31) - 1));
  TerrainNoise noise(simplex, width, height);
  std::vector<Pos> everywhere;
  everywhere.reserve(static_cast<size_t>(width) * height);
  for (int x = 0; x < width; ++x)
    for (int y = 0; y < height; ++y) everywhere.push_back({x, y});
  for (OctaveField* field : {&noise.start, &noise.water_15, &noise.water_5, &noise.mountain_15, &noise.mountain_5})
    field->prefetch(everywhere);
  std::vector<Climate> climates(static_cast<size_t>(width) * height);
  for (int x = 0; x < width; ++x)
    for (int y = 0; y < height; ++y) climates[static_cast<size_t>(x) * height + y] = climate(noise, x, y, player);
  prefetch_noise(noise, climates, width, height);

  std::vector<uint8_t> tunnels(static_cast<size_t>(width) * height, 0);
  for (int x = 0; x < width; ++x) {
    for (int y = 0; y < height; ++y) {
      const size_t index = static_cast<size_t>(x) * height + y;
      bool tunnel = false;
      world.set_material({x, y}, terrain(world, noise, climates[index], x, y, tunnel));
      tunnels[index] = tunnel;
    }
  }
  for (int x = 0; x < width; ++x) {
    for (int y = 0; y < height; ++y) place_creature(world, x, y, player, tunnels[static_cast<size_t>(x) * height + y]);
  }
}

}  // namespace turnrl::envs::crafter
