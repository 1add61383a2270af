#pragma once
// Mean and unbiased standard deviation of a group of numbers: the normalisation every group-relative
// estimator uses. (trainer/advantages.cpp computes the same statistics inline in whiten, grpo and
// token_grpo; they can share this helper once the trainer links turnrl_rewards.)
#include <vector>

namespace turnrl::trainer::rewards {

struct MeanStd {
  double mean = 0.0;
  double std = 0.0;  // unbiased (n - 1); 0 for fewer than two values
};

MeanStd mean_std(const std::vector<double>& values);

}  // namespace turnrl::trainer::rewards
