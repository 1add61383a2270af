#pragma once
// Mean and unbiased standard deviation of a group of numbers: the normalisation every estimator
// uses (trainer/advantages.cpp's whitening and group estimators, GiGPO, dynamic sampling).
#include <vector>

namespace turnrl::trainer::rewards {

struct MeanStd {
  double mean = 0.0;
  double std = 0.0;  // unbiased (n - 1); 0 for fewer than two values
};

MeanStd mean_std(const std::vector<double>& values);

}  // namespace turnrl::trainer::rewards
