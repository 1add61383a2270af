#pragma once
// 3-D OpenSimplex noise (KdotJPG 2014, as lmas/opensimplex v0.3 ports it), bit-exact in doubles.
// The .cpp is compiled with -ffp-contract=off: a fused multiply-add would change the last bits.
#include <array>
#include <cstdint>

namespace turnrl::envs::crafter {

class OpenSimplex {
 public:
  explicit OpenSimplex(int64_t seed);
  double noise3(double x, double y, double z) const;

 private:
  double extrapolate(int64_t xsb, int64_t ysb, int64_t zsb, double dx, double dy, double dz) const;

  std::array<int16_t, 256> perm_{};
  std::array<int16_t, 256> grad_index_{};
};

}  // namespace turnrl::envs::crafter
