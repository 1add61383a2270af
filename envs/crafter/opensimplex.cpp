#include "envs/crafter/opensimplex.h"

#include <algorithm>
#include <bit>
#include <memory>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>

namespace turnrl::envs::crafter {
namespace {

constexpr double kStretch = -1.0 / 6;
constexpr double kSquish = 1.0 / 3;
constexpr double kNorm = 103;

// Python multiplies an int gradient by a float, i.e. by the exactly converted double.
constexpr double kGradients[24][3] = {{-11, 4, 4},   {-4, 11, 4},   {-4, 4, 11},   {11, 4, 4},    {4, 11, 4},
                                      {4, 4, 11},    {-11, -4, 4},  {-4, -11, 4},  {-4, -4, 11},  {11, -4, 4},
                                      {4, -11, 4},   {4, -4, 11},   {-11, 4, -4},  {-4, 11, -4},  {-4, 4, -11},
                                      {11, 4, -4},   {4, 11, -4},   {4, 4, -11},   {-11, -4, -4}, {-4, -11, -4},
                                      {-4, -4, -11}, {11, -4, -4},  {4, -11, -4},  {4, -4, -11}};

int64_t lcg(int64_t s) {
  return static_cast<int64_t>(static_cast<uint64_t>(s) * 6364136223846793005ULL + 1442695040888963407ULL);
}

// The source picks a region of the super-cell and, inside it, two extra vertices through a tree of
// data-dependent comparisons, then adds the attenuated extrapolations at the region's vertices and
// at the two extra ones. Here every point gets a key from the same comparisons, made with masks
// rather than branches (they would mispredict about every other point); the points are grouped by
// key and each group runs a loop of its own, whose vertices the source's rules give at compile time.
// All of it runs two points at a time in the lanes of SSE2 registers, each lane doing the source's
// operations on doubles in the source's order, so every result is the source's, bit for bit.

/**
 * One coordinate of a vertex: its lattice offset from the super-cell origin, and the source's
 * operations giving its distance from the origin's distance d0: ((d0 - first) - second) - third.
 * Subtracting +0.0 is exact (d - 0.0 == d, -0.0 included), so shorter chains end in zeros.
 */
struct Axis {
  int offset;
  double first, second, third;
};
using Vertex = std::array<Axis, 3>;
using ExtraVertices = std::array<Vertex, 2>;

/** The source's usual form: each coordinate is (d0 - offset) - (i + j + k) * SQUISH. */
constexpr Vertex vertex(int i, int j, int k) {
  const double squish = (i + j + k) * kSquish;
  return {Axis{i, static_cast<double>(i), squish, 0}, Axis{j, static_cast<double>(j), squish, 0},
          Axis{k, static_cast<double>(k), squish, 0}};
}

/** in_sum <= 1. c is the one vertex the source keeps when wins is larger, else the two it keeps. */
constexpr ExtraVertices lower_extra(int c) {
  const int x = c & 1, y = (c >> 1) & 1, z = (c >> 2) & 1;
  if (std::popcount(static_cast<unsigned>(c)) == 2) return {vertex(x, y, z), vertex(2 * x - 1, 2 * y - 1, 2 * z - 1)};
  int y0 = y, y1 = y;
  if (!y) (x ? y0 : y1) = -1;
  return {vertex(x ? 1 : -1, y0, z), vertex(x, y1, z ? 1 : -1)};
}

/** in_sum >= 2, the mirror image: c has two bits when 3 - in_sum is smaller, else one. */
constexpr ExtraVertices upper_extra(int c) {
  const int x = c & 1, y = (c >> 1) & 1, z = (c >> 2) & 1;
  if (std::popcount(static_cast<unsigned>(c)) == 1) return {vertex(x, y, z), vertex(2 * x, 2 * y, 2 * z)};
  // With y, the source moves one of them a step further in y after the squish: ((dy0 - 1) - 3 * SQUISH) - 1.
  ExtraVertices extra = {vertex(2 * x, y * (2 - x), z), vertex(x, y * (1 + x), 2 * z)};
  if (y) extra[x][1] = Axis{2, 1, 3 * kSquish, 1};
  return extra;
}

/** In between (the octahedron), from the two closest points; a point with two bits is on the further side. */
constexpr ExtraVertices middle_extra(int a_point, int b_point) {
  const auto further = [](int point) { return std::popcount(static_cast<unsigned>(point)) == 2; };
  const auto two_steps = [](int c) { return c & 1 ? vertex(2, 0, 0) : c & 2 ? vertex(0, 2, 0) : vertex(0, 0, 2); };
  const auto back_step = [](int c) {
    return !(c & 1) ? vertex(-1, 1, 1) : !(c & 2) ? vertex(1, -1, 1) : vertex(1, 1, -1);
  };
  if (further(a_point) && further(b_point)) return {vertex(1, 1, 1), two_steps(a_point & b_point)};
  if (!further(a_point) && !further(b_point)) return {vertex(0, 0, 0), back_step(a_point | b_point)};
  const int c1 = further(a_point) ? a_point : b_point, c2 = further(a_point) ? b_point : a_point;
  Vertex ext1 = two_steps(c2);
  // The source takes its two steps after the squish: (d0 - 2 * SQUISH) - 2.
  for (Axis& axis : ext1)
    if (axis.offset == 2) axis = Axis{2, 2 * kSquish, 2, 0};
  return {back_step(c1), ext1};
}

using Pair = double __attribute__((vector_size(16)));  // two points, one per lane of an SSE2 register
using Mask = int64_t __attribute__((vector_size(16)));  // per lane: a comparison's all-ones or zero

constexpr Pair both(double v) { return Pair{v, v}; }
Pair magnitude(Pair v) { return reinterpret_cast<Pair>(reinterpret_cast<Mask>(v) & Mask{INT64_MAX, INT64_MAX}); }
/** v where cond holds, else +0.0 (a select of doubles: GCC scalarizes integer masks of comparisons). */
Pair masked(Mask cond, Pair v) { return cond ? v : both(0); }

/**
 * math.floor in each lane, as an integral double. Adding 1.5 * 2^52 rounds to an integer (the sum
 * lies in [2^52, 2^53), where doubles are the integers); exact for |v| < 2^51, which noise3 checks.
 */
Pair floor_lanes(Pair v) {
  const Pair rounded = (v + both(0x1.8p52)) - both(0x1.8p52);
  return rounded - masked(rounded > v, both(1));
}

// Keys: c for in_sum <= 1, 8 + c for in_sum >= 2, 16 + 8 * a_point + b_point in between.
constexpr int kUpperKeys = 8, kMiddleKeys = 16, kKeys = kMiddleKeys + 8 * 6 + 6 + 1;

/** Whether a point can get `key`: c has one or two bits; a_point is 1, 3, 4 or 6, b_point 1, 2, 5 or 6. */
constexpr bool reachable(int key) {
  if (key < kMiddleKeys) return key % kUpperKeys >= 1 && key % kUpperKeys <= 6;
  const int a_point = (key - kMiddleKeys) / 8, b_point = (key - kMiddleKeys) % 8;
  return (a_point == 1 || a_point == 3 || a_point == 4 || a_point == 6) &&
         (b_point == 1 || b_point == 2 || b_point == 5 || b_point == 6);
}

constexpr ExtraVertices extra_vertices(int key) {
  if (key < kUpperKeys) return lower_extra(key);
  if (key < kMiddleKeys) return upper_extra(key - kUpperKeys);
  return middle_extra((key - kMiddleKeys) / 8, (key - kMiddleKeys) % 8);
}

// The keys are computed in doubles (small integers, exact): selects of doubles compile to SSE2 masks.

/**
 * The tetrahedra: which two of the three vertices next to the corner are closest, then c. The one at
 * (1,1,1) mirrors the one at (0,0,0): the source's comparisons there are those of the negated
 * coordinates (negation is exact and reverses every comparison) and its points are 7 minus the
 * mirrored ones, so both share the code of the one at (0,0,0).
 */
Pair tetrahedron_key(Pair xins, Pair yins, Pair zins, Pair in_sum, Mask upper) {
  const Pair sign = upper ? both(-1) : both(1);
  const Pair x = xins * sign, y = yins * sign, z = zins * sign;
  const Pair wins = upper ? in_sum - both(3) : both(1) - in_sum;  // in_sum - 3 is exactly -(3 - in_sum)
  // The source's if/elif: the two conditions exclude each other.
  const Mask z_replaces_b = (x >= y) & (z > y);
  const Mask z_replaces_a = (x < y) & (z > x);
  const Pair a_score = z_replaces_a ? z : x, b_score = z_replaces_b ? z : y;
  const Pair a_point = both(1) + masked(z_replaces_a, both(3)), b_point = both(2) + masked(z_replaces_b, both(2));
  const Mask single = (wins > a_score) | (wins > b_score);
  // a_point | b_point: the points are distinct bits. Mirrored, (7 - a) & (7 - b) is 7 - (a | b).
  const Pair c = single ? (b_score > a_score ? b_point : a_point) : a_point + b_point;
  return upper ? both(kUpperKeys + 7) - c : c;
}

/** The octahedron in between: the closest vertex of each pair of axes, then the two best. */
Pair middle_key(Pair xins, Pair yins, Pair zins) {
  const Pair p1 = xins + yins, p2 = xins + zins, p3 = yins + zins;
  // The source's p > 1 ? p - 1 : 1 - p is |p - 1|: 1 - p is exactly -(p - 1).
  const Pair a_score = magnitude(p1 - both(1)), b_score = magnitude(p2 - both(1)), score = magnitude(p3 - both(1));
  const Pair point3 = both(1) + masked(p3 > both(1), both(5));
  const Pair a_point = ((a_score <= b_score) & (a_score < score)) ? point3 : both(4) - masked(p1 > both(1), both(1));
  const Pair b_point = ((a_score > b_score) & (b_score < score)) ? point3 : both(2) + masked(p2 > both(1), both(3));
  return both(kMiddleKeys) + both(8) * a_point + b_point;
}

/** A point placed in the honeycomb: its super-cell's origin and its distance from that origin. */
struct Cell {
  int64_t xsb, ysb, zsb;
  double dx0, dy0, dz0;
};

/** The source's noise3 up to the choice of vertices, for two points: their cells and keys. */
struct Located {
  Pair xsb, ysb, zsb, dx0, dy0, dz0;
  Pair key;

  Located(Pair x, Pair y, Pair z) {
    // |x| + |y| + |z| <= 2^50 keeps |xs|, |ys|, |zs| below 2^51 and the floors' sum below 2^53.
    const Mask in_range = magnitude(x) + magnitude(y) + magnitude(z) <= both(0x1p50);
    if (!(in_range[0] & in_range[1]))
      throw std::out_of_range("OpenSimplex::noise3: coordinates must be finite, |x| + |y| + |z| <= 2^50");
    const Pair stretch_offset = (x + y + z) * kStretch;
    const Pair xs = x + stretch_offset;
    const Pair ys = y + stretch_offset;
    const Pair zs = z + stretch_offset;

    xsb = floor_lanes(xs);
    ysb = floor_lanes(ys);
    zsb = floor_lanes(zs);

    // Python adds the ints exactly and converts the sum: the doubles here are integers below 2^53.
    const Pair squish_offset = (xsb + ysb + zsb) * kSquish;
    dx0 = x - (xsb + squish_offset);
    dy0 = y - (ysb + squish_offset);
    dz0 = z - (zsb + squish_offset);

    const Pair xins = xs - xsb;
    const Pair yins = ys - ysb;
    const Pair zins = zs - zsb;
    const Pair in_sum = xins + yins + zins;
    const Mask upper = in_sum >= both(2);
    key = (in_sum <= both(1)) | upper ? tetrahedron_key(xins, yins, zins, in_sum, upper) : middle_key(xins, yins, zins);
  }

  Cell cell(int lane) const {
    return {static_cast<int64_t>(xsb[lane]), static_cast<int64_t>(ysb[lane]), static_cast<int64_t>(zsb[lane]),
            dx0[lane], dy0[lane], dz0[lane]};
  }
};

/** The hash and gradient tables of one OpenSimplex. */
struct Lattice {
  const uint8_t* perm;
  const double *gradient_x, *gradient_y, *gradient_z;

  /** The hash of the vertex at offset (i, j, k) from the cell's origin. */
  int64_t hash(const Cell& cell, int i, int j, int k) const {
    const int64_t xy = perm[(perm[(cell.xsb + i) & 0xFF] + cell.ysb + j) & 0xFF];
    return (xy + cell.zsb + k) & 0xFF;
  }
};

/**
 * Sets out[i] to the noise at cells[i] for the `count` indices i, whose points all have the key kKey:
 * its region's vertices and then its extra ones, two points at a time (an odd last point twice).
 * One instance per key, so that every vertex's offsets are constants.
 * A vertex out of reach, which the source skips, adds 0 * gradient = +-0.0 to a value that starts
 * at +0.0 and so never is -0.0: it leaves the value unchanged.
 */
template <int kKey>
void evaluate(const Lattice& lattice, const Cell* cells, const uint32_t* indices, size_t count, double* out) {
  constexpr ExtraVertices kExtra = extra_vertices(kKey);
  for (size_t n = 0; n < count; n += 2) {
    const uint32_t first = indices[n], second = indices[n + 1 < count ? n + 1 : n];
    const Cell& a = cells[first];
    const Cell& b = cells[second];
    const Pair dx0 = {a.dx0, b.dx0}, dy0 = {a.dy0, b.dy0}, dz0 = {a.dz0, b.dz0};
    Pair value = both(0.0);
    const auto add = [&](int i, int j, int k, Pair dx, Pair dy, Pair dz) __attribute__((always_inline)) {
      Pair attn = 2 - dx * dx - dy * dy - dz * dz;
      attn = attn > 0 ? attn : 0;
      attn *= attn;
      const int64_t ha = lattice.hash(a, i, j, k), hb = lattice.hash(b, i, j, k);
      const Pair gx = {lattice.gradient_x[ha], lattice.gradient_x[hb]};
      const Pair gy = {lattice.gradient_y[ha], lattice.gradient_y[hb]};
      const Pair gz = {lattice.gradient_z[ha], lattice.gradient_z[hb]};
      value += attn * attn * (gx * dx + gy * dy + gz * dz);
    };
    // The region's own vertices: each coordinate is (d0 - offset) - (i + j + k) * SQUISH.
    const auto add_own = [&](int i, int j, int k) __attribute__((always_inline)) {
      const double squish = (i + j + k) * kSquish;
      add(i, j, k, (dx0 - static_cast<double>(i)) - squish, (dy0 - static_cast<double>(j)) - squish,
          (dz0 - static_cast<double>(k)) - squish);
    };
    if constexpr (kKey < kUpperKeys) {
      add_own(0, 0, 0);
      add_own(1, 0, 0);
      add_own(0, 1, 0);
      add_own(0, 0, 1);
    } else if constexpr (kKey < kMiddleKeys) {
      add_own(1, 1, 0);
      add_own(1, 0, 1);
      add_own(0, 1, 1);
      add_own(1, 1, 1);
    } else {
      add_own(1, 0, 0);
      add_own(0, 1, 0);
      add_own(0, 0, 1);
      add_own(1, 1, 0);
      add_own(1, 0, 1);
      add_own(0, 1, 1);
    }
    const auto add_extra = [&](const Vertex& v) __attribute__((always_inline)) {
      const auto distance = [](Pair d0, const Axis& axis) { return ((d0 - axis.first) - axis.second) - axis.third; };
      add(v[0].offset, v[1].offset, v[2].offset, distance(dx0, v[0]), distance(dy0, v[1]), distance(dz0, v[2]));
    };
    add_extra(kExtra[0]);
    add_extra(kExtra[1]);
    value /= kNorm;
    out[first] = value[0];
    out[second] = value[1];
  }
}

using Evaluator = void (*)(const Lattice&, const Cell*, const uint32_t*, size_t, double*);

/** evaluate<key> by key, null for unreachable keys. */
constexpr auto kEvaluators = []<int... kKey>(std::integer_sequence<int, kKey...>) {
  const auto evaluator = []<int kOne>(std::integral_constant<int, kOne>) -> Evaluator {
    if constexpr (reachable(kOne)) return &evaluate<kOne>;
    return nullptr;
  };
  return std::array<Evaluator, kKeys>{evaluator(std::integral_constant<int, kKey>{})...};
}(std::make_integer_sequence<int, kKeys>{});

}  // namespace

OpenSimplex::OpenSimplex(int64_t seed) {
  std::array<uint8_t, 256> source{};
  for (int i = 0; i < 256; ++i) source[i] = static_cast<uint8_t>(i);
  int64_t s = lcg(lcg(lcg(seed)));
  for (int i = 255; i >= 0; --i) {
    s = lcg(s);
    // Python's (s + 31) % (i + 1) on the mathematical value: floor-mod, never overflowing.
    const int64_t m = i + 1;
    int64_t r = (s % m + 31) % m;
    if (r < 0) r += m;
    perm_[i] = source[r];
    source[r] = source[i];
  }
  for (int h = 0; h < 256; ++h) {
    const double* g = kGradients[perm_[h] % 24];
    gradient_x_[h] = g[0];
    gradient_y_[h] = g[1];
    gradient_z_[h] = g[2];
  }
}

double OpenSimplex::noise3(double x, double y, double z) const {
  const Located located(both(x), both(y), both(z));
  const Cell cell = located.cell(0);
  const uint32_t index = 0;
  double value;
  const Lattice lattice{perm_.data(), gradient_x_.data(), gradient_y_.data(), gradient_z_.data()};
  kEvaluators[static_cast<int>(located.key[0])](lattice, &cell, &index, 1, &value);
  return value;
}

void OpenSimplex::noise3(std::span<const double> x, std::span<const double> y, std::span<const double> z,
                         std::span<double> out) const {
  const size_t n = x.size();
  if (y.size() != n || z.size() != n || out.size() != n || n > UINT32_MAX)
    throw std::invalid_argument("OpenSimplex::noise3: x, y, z and out sizes differ (" + std::to_string(n) + ", " +
                                std::to_string(y.size()) + ", " + std::to_string(z.size()) + ", " +
                                std::to_string(out.size()) + ") or exceed 2^32");
  // Located two by two (an odd last point fills both lanes), then grouped by key (a counting sort).
  const std::unique_ptr<Cell[]> cells(new Cell[n]);
  const std::unique_ptr<uint8_t[]> keys(new uint8_t[n]);
  std::array<uint32_t, kKeys + 1> starts{};
  for (size_t i = 0; i < n; i += 2) {
    const size_t j = std::min(i + 1, n - 1);
    const Located located(Pair{x[i], x[j]}, Pair{y[i], y[j]}, Pair{z[i], z[j]});
    cells[i] = located.cell(0);
    cells[j] = located.cell(1);
    keys[i] = static_cast<uint8_t>(located.key[0]);
    keys[j] = static_cast<uint8_t>(located.key[1]);
  }
  for (size_t i = 0; i < n; ++i) ++starts[keys[i] + 1];
  for (int key = 0; key < kKeys; ++key) starts[key + 1] += starts[key];
  const std::unique_ptr<uint32_t[]> order(new uint32_t[n]);
  std::array<uint32_t, kKeys> next{};
  std::copy(starts.begin(), starts.end() - 1, next.begin());
  for (size_t i = 0; i < n; ++i) order[next[keys[i]]++] = static_cast<uint32_t>(i);
  const Lattice lattice{perm_.data(), gradient_x_.data(), gradient_y_.data(), gradient_z_.data()};
  for (int key = 0; key < kKeys; ++key)
    if (starts[key + 1] > starts[key])
      kEvaluators[key](lattice, cells.get(), order.get() + starts[key], starts[key + 1] - starts[key], out.data());
}

}  // namespace turnrl::envs::crafter
