#include "envs/crafter/opensimplex.h"

#include <cmath>

namespace turnrl::envs::crafter {
namespace {

constexpr double kStretch = -1.0 / 6;
constexpr double kSquish = 1.0 / 3;
constexpr double kNorm = 103;

// Doubles: Python multiplies an int gradient by a float, i.e. by the exactly converted double.
constexpr double kGradients[72] = {
    -11, 4,  4,  -4, 11,  4,  -4, 4,  11,  11, 4,  4,  4,  11,  4,  4,  4,  11,  -11, -4, 4,  -4, -11, 4,
    -4,  -4, 11, 11, -4,  4,  4,  -11, 4,  4,  -4, 11, -11, 4,  -4, -4, 11, -4, -4,  4,  -11, 11, 4,  -4,
    4,   11, -4, 4,  4,   -11, -11, -4, -4, -4, -11, -4, -4, -4, -11, 11,  -4, -4, 4,  -11, -4, 4,  -4, -11};

int64_t lcg(int64_t s) {
  return static_cast<int64_t>(static_cast<uint64_t>(s) * 6364136223846793005ULL + 1442695040888963407ULL);
}

/** math.floor for the small magnitudes noise sees, without a libm call. */
int64_t floor_to_int(double v) {
  const int64_t truncated = static_cast<int64_t>(v);
  return v < static_cast<double>(truncated) ? truncated - 1 : truncated;
}

}  // namespace

OpenSimplex::OpenSimplex(int64_t seed) {
  std::array<int16_t, 256> source{};
  for (int i = 0; i < 256; ++i) source[i] = static_cast<int16_t>(i);
  int64_t s = lcg(lcg(lcg(seed)));
  for (int i = 255; i >= 0; --i) {
    s = lcg(s);
    // Python's (s + 31) % (i + 1) on the mathematical value: floor-mod, never overflowing.
    const int64_t m = i + 1;
    int64_t r = (s % m + 31) % m;
    if (r < 0) r += m;
    perm_[i] = source[r];
    grad_index_[i] = static_cast<int16_t>((perm_[i] % 24) * 3);
    source[r] = source[i];
  }
}

double OpenSimplex::extrapolate(int64_t xsb, int64_t ysb, int64_t zsb, double dx, double dy, double dz) const {
  const int index = grad_index_[(perm_[(perm_[xsb & 0xFF] + ysb) & 0xFF] + zsb) & 0xFF];
  return kGradients[index] * dx + kGradients[index + 1] * dy + kGradients[index + 2] * dz;
}

// Transliterated branch by branch; every expression keeps the source's evaluation order.
double OpenSimplex::noise3(double x, double y, double z) const {
  const double stretch_offset = (x + y + z) * kStretch;
  const double xs = x + stretch_offset;
  const double ys = y + stretch_offset;
  const double zs = z + stretch_offset;

  const int64_t xsb = floor_to_int(xs);
  const int64_t ysb = floor_to_int(ys);
  const int64_t zsb = floor_to_int(zs);

  const double squish_offset = static_cast<double>(xsb + ysb + zsb) * kSquish;
  const double xb = xsb + squish_offset;
  const double yb = ysb + squish_offset;
  const double zb = zsb + squish_offset;

  const double xins = xs - xsb;
  const double yins = ys - ysb;
  const double zins = zs - zsb;
  const double in_sum = xins + yins + zins;

  double dx0 = x - xb;
  double dy0 = y - yb;
  double dz0 = z - zb;

  double dx_ext0, dy_ext0, dz_ext0, dx_ext1, dy_ext1, dz_ext1;
  int64_t xsv_ext0, ysv_ext0, zsv_ext0, xsv_ext1, ysv_ext1, zsv_ext1;

  double value = 0;
  auto contribute = [&](int64_t xv, int64_t yv, int64_t zv, double dx, double dy, double dz) {
    double attn = 2 - dx * dx - dy * dy - dz * dz;
    if (attn > 0) {
      attn *= attn;
      value += attn * attn * extrapolate(xv, yv, zv, dx, dy, dz);
    }
  };

  if (in_sum <= 1) {
    int a_point = 0x01;
    double a_score = xins;
    int b_point = 0x02;
    double b_score = yins;
    if (a_score >= b_score && zins > b_score) {
      b_score = zins;
      b_point = 0x04;
    } else if (a_score < b_score && zins > a_score) {
      a_score = zins;
      a_point = 0x04;
    }
    const double wins = 1 - in_sum;
    if (wins > a_score || wins > b_score) {
      const int c = b_score > a_score ? b_point : a_point;
      if ((c & 0x01) == 0) {
        xsv_ext0 = xsb - 1;
        xsv_ext1 = xsb;
        dx_ext0 = dx0 + 1;
        dx_ext1 = dx0;
      } else {
        xsv_ext0 = xsv_ext1 = xsb + 1;
        dx_ext0 = dx_ext1 = dx0 - 1;
      }
      if ((c & 0x02) == 0) {
        ysv_ext0 = ysv_ext1 = ysb;
        dy_ext0 = dy_ext1 = dy0;
        if ((c & 0x01) == 0) {
          ysv_ext1 -= 1;
          dy_ext1 += 1;
        } else {
          ysv_ext0 -= 1;
          dy_ext0 += 1;
        }
      } else {
        ysv_ext0 = ysv_ext1 = ysb + 1;
        dy_ext0 = dy_ext1 = dy0 - 1;
      }
      if ((c & 0x04) == 0) {
        zsv_ext0 = zsb;
        zsv_ext1 = zsb - 1;
        dz_ext0 = dz0;
        dz_ext1 = dz0 + 1;
      } else {
        zsv_ext0 = zsv_ext1 = zsb + 1;
        dz_ext0 = dz_ext1 = dz0 - 1;
      }
    } else {
      const int c = a_point | b_point;
      if ((c & 0x01) == 0) {
        xsv_ext0 = xsb;
        xsv_ext1 = xsb - 1;
        dx_ext0 = dx0 - 2 * kSquish;
        dx_ext1 = dx0 + 1 - kSquish;
      } else {
        xsv_ext0 = xsv_ext1 = xsb + 1;
        dx_ext0 = dx0 - 1 - 2 * kSquish;
        dx_ext1 = dx0 - 1 - kSquish;
      }
      if ((c & 0x02) == 0) {
        ysv_ext0 = ysb;
        ysv_ext1 = ysb - 1;
        dy_ext0 = dy0 - 2 * kSquish;
        dy_ext1 = dy0 + 1 - kSquish;
      } else {
        ysv_ext0 = ysv_ext1 = ysb + 1;
        dy_ext0 = dy0 - 1 - 2 * kSquish;
        dy_ext1 = dy0 - 1 - kSquish;
      }
      if ((c & 0x04) == 0) {
        zsv_ext0 = zsb;
        zsv_ext1 = zsb - 1;
        dz_ext0 = dz0 - 2 * kSquish;
        dz_ext1 = dz0 + 1 - kSquish;
      } else {
        zsv_ext0 = zsv_ext1 = zsb + 1;
        dz_ext0 = dz0 - 1 - 2 * kSquish;
        dz_ext1 = dz0 - 1 - kSquish;
      }
    }
    contribute(xsb + 0, ysb + 0, zsb + 0, dx0, dy0, dz0);
    const double dx1 = dx0 - 1 - kSquish;
    const double dy1 = dy0 - 0 - kSquish;
    const double dz1 = dz0 - 0 - kSquish;
    contribute(xsb + 1, ysb + 0, zsb + 0, dx1, dy1, dz1);
    const double dx2 = dx0 - 0 - kSquish;
    const double dy2 = dy0 - 1 - kSquish;
    const double dz2 = dz1;
    contribute(xsb + 0, ysb + 1, zsb + 0, dx2, dy2, dz2);
    const double dx3 = dx2;
    const double dy3 = dy1;
    const double dz3 = dz0 - 1 - kSquish;
    contribute(xsb + 0, ysb + 0, zsb + 1, dx3, dy3, dz3);
  } else if (in_sum >= 2) {
    int a_point = 0x06;
    double a_score = xins;
    int b_point = 0x05;
    double b_score = yins;
    if (a_score <= b_score && zins < b_score) {
      b_score = zins;
      b_point = 0x03;
    } else if (a_score > b_score && zins < a_score) {
      a_score = zins;
      a_point = 0x03;
    }
    const double wins = 3 - in_sum;
    if (wins < a_score || wins < b_score) {
      const int c = b_score < a_score ? b_point : a_point;
      if ((c & 0x01) != 0) {
        xsv_ext0 = xsb + 2;
        xsv_ext1 = xsb + 1;
        dx_ext0 = dx0 - 2 - 3 * kSquish;
        dx_ext1 = dx0 - 1 - 3 * kSquish;
      } else {
        xsv_ext0 = xsv_ext1 = xsb;
        dx_ext0 = dx_ext1 = dx0 - 3 * kSquish;
      }
      if ((c & 0x02) != 0) {
        ysv_ext0 = ysv_ext1 = ysb + 1;
        dy_ext0 = dy_ext1 = dy0 - 1 - 3 * kSquish;
        if ((c & 0x01) != 0) {
          ysv_ext1 += 1;
          dy_ext1 -= 1;
        } else {
          ysv_ext0 += 1;
          dy_ext0 -= 1;
        }
      } else {
        ysv_ext0 = ysv_ext1 = ysb;
        dy_ext0 = dy_ext1 = dy0 - 3 * kSquish;
      }
      if ((c & 0x04) != 0) {
        zsv_ext0 = zsb + 1;
        zsv_ext1 = zsb + 2;
        dz_ext0 = dz0 - 1 - 3 * kSquish;
        dz_ext1 = dz0 - 2 - 3 * kSquish;
      } else {
        zsv_ext0 = zsv_ext1 = zsb;
        dz_ext0 = dz_ext1 = dz0 - 3 * kSquish;
      }
    } else {
      const int c = a_point & b_point;
      if ((c & 0x01) != 0) {
        xsv_ext0 = xsb + 1;
        xsv_ext1 = xsb + 2;
        dx_ext0 = dx0 - 1 - kSquish;
        dx_ext1 = dx0 - 2 - 2 * kSquish;
      } else {
        xsv_ext0 = xsv_ext1 = xsb;
        dx_ext0 = dx0 - kSquish;
        dx_ext1 = dx0 - 2 * kSquish;
      }
      if ((c & 0x02) != 0) {
        ysv_ext0 = ysb + 1;
        ysv_ext1 = ysb + 2;
        dy_ext0 = dy0 - 1 - kSquish;
        dy_ext1 = dy0 - 2 - 2 * kSquish;
      } else {
        ysv_ext0 = ysv_ext1 = ysb;
        dy_ext0 = dy0 - kSquish;
        dy_ext1 = dy0 - 2 * kSquish;
      }
      if ((c & 0x04) != 0) {
        zsv_ext0 = zsb + 1;
        zsv_ext1 = zsb + 2;
        dz_ext0 = dz0 - 1 - kSquish;
        dz_ext1 = dz0 - 2 - 2 * kSquish;
      } else {
        zsv_ext0 = zsv_ext1 = zsb;
        dz_ext0 = dz0 - kSquish;
        dz_ext1 = dz0 - 2 * kSquish;
      }
    }
    const double dx3 = dx0 - 1 - 2 * kSquish;
    const double dy3 = dy0 - 1 - 2 * kSquish;
    const double dz3 = dz0 - 0 - 2 * kSquish;
    contribute(xsb + 1, ysb + 1, zsb + 0, dx3, dy3, dz3);
    const double dx2 = dx3;
    const double dy2 = dy0 - 0 - 2 * kSquish;
    const double dz2 = dz0 - 1 - 2 * kSquish;
    contribute(xsb + 1, ysb + 0, zsb + 1, dx2, dy2, dz2);
    const double dx1 = dx0 - 0 - 2 * kSquish;
    const double dy1 = dy3;
    const double dz1 = dz2;
    contribute(xsb + 0, ysb + 1, zsb + 1, dx1, dy1, dz1);
    dx0 = dx0 - 1 - 3 * kSquish;
    dy0 = dy0 - 1 - 3 * kSquish;
    dz0 = dz0 - 1 - 3 * kSquish;
    contribute(xsb + 1, ysb + 1, zsb + 1, dx0, dy0, dz0);
  } else {
    double a_score, b_score;
    int a_point, b_point;
    bool a_is_further_side, b_is_further_side;
    const double p1 = xins + yins;
    if (p1 > 1) {
      a_score = p1 - 1;
      a_point = 0x03;
      a_is_further_side = true;
    } else {
      a_score = 1 - p1;
      a_point = 0x04;
      a_is_further_side = false;
    }
    const double p2 = xins + zins;
    if (p2 > 1) {
      b_score = p2 - 1;
      b_point = 0x05;
      b_is_further_side = true;
    } else {
      b_score = 1 - p2;
      b_point = 0x02;
      b_is_further_side = false;
    }
    const double p3 = yins + zins;
    if (p3 > 1) {
      const double score = p3 - 1;
      if (a_score <= b_score && a_score < score) {
        a_point = 0x06;
        a_is_further_side = true;
      } else if (a_score > b_score && b_score < score) {
        b_point = 0x06;
        b_is_further_side = true;
      }
    } else {
      const double score = 1 - p3;
      if (a_score <= b_score && a_score < score) {
        a_point = 0x01;
        a_is_further_side = false;
      } else if (a_score > b_score && b_score < score) {
        b_point = 0x01;
        b_is_further_side = false;
      }
    }
    if (a_is_further_side == b_is_further_side) {
      if (a_is_further_side) {
        dx_ext0 = dx0 - 1 - 3 * kSquish;
        dy_ext0 = dy0 - 1 - 3 * kSquish;
        dz_ext0 = dz0 - 1 - 3 * kSquish;
        xsv_ext0 = xsb + 1;
        ysv_ext0 = ysb + 1;
        zsv_ext0 = zsb + 1;
        const int c = a_point & b_point;
        if ((c & 0x01) != 0) {
          dx_ext1 = dx0 - 2 - 2 * kSquish;
          dy_ext1 = dy0 - 2 * kSquish;
          dz_ext1 = dz0 - 2 * kSquish;
          xsv_ext1 = xsb + 2;
          ysv_ext1 = ysb;
          zsv_ext1 = zsb;
        } else if ((c & 0x02) != 0) {
          dx_ext1 = dx0 - 2 * kSquish;
          dy_ext1 = dy0 - 2 - 2 * kSquish;
          dz_ext1 = dz0 - 2 * kSquish;
          xsv_ext1 = xsb;
          ysv_ext1 = ysb + 2;
          zsv_ext1 = zsb;
        } else {
          dx_ext1 = dx0 - 2 * kSquish;
          dy_ext1 = dy0 - 2 * kSquish;
          dz_ext1 = dz0 - 2 - 2 * kSquish;
          xsv_ext1 = xsb;
          ysv_ext1 = ysb;
          zsv_ext1 = zsb + 2;
        }
      } else {
        dx_ext0 = dx0;
        dy_ext0 = dy0;
        dz_ext0 = dz0;
        xsv_ext0 = xsb;
        ysv_ext0 = ysb;
        zsv_ext0 = zsb;
        const int c = a_point | b_point;
        if ((c & 0x01) == 0) {
          dx_ext1 = dx0 + 1 - kSquish;
          dy_ext1 = dy0 - 1 - kSquish;
          dz_ext1 = dz0 - 1 - kSquish;
          xsv_ext1 = xsb - 1;
          ysv_ext1 = ysb + 1;
          zsv_ext1 = zsb + 1;
        } else if ((c & 0x02) == 0) {
          dx_ext1 = dx0 - 1 - kSquish;
          dy_ext1 = dy0 + 1 - kSquish;
          dz_ext1 = dz0 - 1 - kSquish;
          xsv_ext1 = xsb + 1;
          ysv_ext1 = ysb - 1;
          zsv_ext1 = zsb + 1;
        } else {
          dx_ext1 = dx0 - 1 - kSquish;
          dy_ext1 = dy0 - 1 - kSquish;
          dz_ext1 = dz0 + 1 - kSquish;
          xsv_ext1 = xsb + 1;
          ysv_ext1 = ysb + 1;
          zsv_ext1 = zsb - 1;
        }
      }
    } else {
      const int c1 = a_is_further_side ? a_point : b_point;
      const int c2 = a_is_further_side ? b_point : a_point;
      if ((c1 & 0x01) == 0) {
        dx_ext0 = dx0 + 1 - kSquish;
        dy_ext0 = dy0 - 1 - kSquish;
        dz_ext0 = dz0 - 1 - kSquish;
        xsv_ext0 = xsb - 1;
        ysv_ext0 = ysb + 1;
        zsv_ext0 = zsb + 1;
      } else if ((c1 & 0x02) == 0) {
        dx_ext0 = dx0 - 1 - kSquish;
        dy_ext0 = dy0 + 1 - kSquish;
        dz_ext0 = dz0 - 1 - kSquish;
        xsv_ext0 = xsb + 1;
        ysv_ext0 = ysb - 1;
        zsv_ext0 = zsb + 1;
      } else {
        dx_ext0 = dx0 - 1 - kSquish;
        dy_ext0 = dy0 - 1 - kSquish;
        dz_ext0 = dz0 + 1 - kSquish;
        xsv_ext0 = xsb + 1;
        ysv_ext0 = ysb + 1;
        zsv_ext0 = zsb - 1;
      }
      dx_ext1 = dx0 - 2 * kSquish;
      dy_ext1 = dy0 - 2 * kSquish;
      dz_ext1 = dz0 - 2 * kSquish;
      xsv_ext1 = xsb;
      ysv_ext1 = ysb;
      zsv_ext1 = zsb;
      if ((c2 & 0x01) != 0) {
        dx_ext1 -= 2;
        xsv_ext1 += 2;
      } else if ((c2 & 0x02) != 0) {
        dy_ext1 -= 2;
        ysv_ext1 += 2;
      } else {
        dz_ext1 -= 2;
        zsv_ext1 += 2;
      }
    }
    const double dx1 = dx0 - 1 - kSquish;
    const double dy1 = dy0 - 0 - kSquish;
    const double dz1 = dz0 - 0 - kSquish;
    contribute(xsb + 1, ysb + 0, zsb + 0, dx1, dy1, dz1);
    const double dx2 = dx0 - 0 - kSquish;
    const double dy2 = dy0 - 1 - kSquish;
    const double dz2 = dz1;
    contribute(xsb + 0, ysb + 1, zsb + 0, dx2, dy2, dz2);
    const double dx3 = dx2;
    const double dy3 = dy1;
    const double dz3 = dz0 - 1 - kSquish;
    contribute(xsb + 0, ysb + 0, zsb + 1, dx3, dy3, dz3);
    const double dx4 = dx0 - 1 - 2 * kSquish;
    const double dy4 = dy0 - 1 - 2 * kSquish;
    const double dz4 = dz0 - 0 - 2 * kSquish;
    contribute(xsb + 1, ysb + 1, zsb + 0, dx4, dy4, dz4);
    const double dx5 = dx4;
    const double dy5 = dy0 - 0 - 2 * kSquish;
    const double dz5 = dz0 - 1 - 2 * kSquish;
    contribute(xsb + 1, ysb + 0, zsb + 1, dx5, dy5, dz5);
    const double dx6 = dx0 - 0 - 2 * kSquish;
    const double dy6 = dy4;
    const double dz6 = dz5;
    contribute(xsb + 0, ysb + 1, zsb + 1, dx6, dy6, dz6);
  }
  contribute(xsv_ext0, ysv_ext0, zsv_ext0, dx_ext0, dy_ext0, dz_ext0);
  contribute(xsv_ext1, ysv_ext1, zsv_ext1, dx_ext1, dy_ext1, dz_ext1);
  return value / kNorm;
}

}  // namespace turnrl::envs::crafter
