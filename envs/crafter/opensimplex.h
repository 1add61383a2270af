#pragma once
// 3-D OpenSimplex noise (KdotJPG 2014, as lmas/opensimplex v0.3 ports it), bit-exact in doubles.
// The .cpp is compiled with -ffp-contract=off: a fused multiply-add would change the last bits.
#include <array>
#include <cstdint>
#include <span>

namespace turnrl::envs::crafter {

class OpenSimplex {
 public:
  explicit OpenSimplex(int64_t seed);
  /** The source's noise3d(x, y, z); throws std::out_of_range unless finite with |x| + |y| + |z| <= 2^50. */
  double noise3(double x, double y, double z) const;
  /** out[i] = noise3(x[i], y[i], z[i]), bit for bit, at about half the cost per point of single calls.
   *  Throws std::invalid_argument when the sizes differ. */
  void noise3(std::span<const double> x, std::span<const double> y, std::span<const double> z,
              std::span<double> out) const;

 private:
  std::array<uint8_t, 256> perm_{};
  // The source's GRADIENTS_3D[perm_grad_index_3D[h]] by hash h, one array per axis (plain indexed loads).
  std::array<double, 256> gradient_x_{}, gradient_y_{}, gradient_z_{};
};

}  // namespace turnrl::envs::crafter
