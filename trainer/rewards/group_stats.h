#pragma once
// Mean and unbiased standard deviation of a group of numbers: the normalisation every estimator
// uses (trainer/algo/advantages.cpp's whitening and group estimators, GiGPO, dynamic sampling).
#include <cstddef>
#include <vector>

#include "trainer/dist/rank_sum.h"

namespace turnrl::trainer::rewards {

struct MeanStd {
  double mean = 0.0;
  double std = 0.0;  // unbiased (n - 1); 0 for fewer than two values
  size_t count = 0;  // n
};

/** Over `values` of every rank when `ranks` is set (two sums over the ranks: the mean, then the
 *  squared deviations from it, as in one process). */
MeanStd mean_std(const std::vector<double>& values, RankSum* ranks = nullptr);

}  // namespace turnrl::trainer::rewards
