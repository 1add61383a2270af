#include "trainer/rewards/group_stats.h"

#include <cmath>

namespace turnrl::trainer::rewards {

MeanStd mean_std(const std::vector<double>& values, RankSum* ranks) {
  std::vector<double> totals = {0.0, static_cast<double>(values.size())};
  for (double x : values) totals[0] += x;
  if (ranks) ranks->sum(totals);
  MeanStd stats;
  stats.count = static_cast<size_t>(totals[1]);
  if (stats.count == 0) return stats;
  stats.mean = totals[0] / totals[1];
  if (stats.count < 2) return stats;
  std::vector<double> squares = {0.0};
  for (double x : values) squares[0] += (x - stats.mean) * (x - stats.mean);
  if (ranks) ranks->sum(squares);
  stats.std = std::sqrt(squares[0] / static_cast<double>(stats.count - 1));
  return stats;
}

}  // namespace turnrl::trainer::rewards
