#include "trainer/rewards/group_stats.h"

#include <cmath>

namespace turnrl::trainer::rewards {

MeanStd mean_std(const std::vector<double>& values) {
  MeanStd stats;
  if (values.empty()) return stats;
  for (double x : values) stats.mean += x;
  stats.mean /= static_cast<double>(values.size());
  if (values.size() < 2) return stats;
  double squares = 0.0;
  for (double x : values) squares += (x - stats.mean) * (x - stats.mean);
  stats.std = std::sqrt(squares / static_cast<double>(values.size() - 1));
  return stats;
}

}  // namespace turnrl::trainer::rewards
