#pragma once
// What batch statistics need from a data-parallel run: sums over its ranks. A statistic "over the
// batch" (advantage whitening) adds its per-rank partial sums through this, so that W ranks compute
// what one process computes over the combined batch. Torch-free; the process group behind it is
// trainer/dist/distributed.h. A null RankSum* everywhere means one process.
#include <vector>

namespace turnrl::trainer {

class RankSum {
 public:
  virtual ~RankSum() = default;
  /** Replaces each entry by its sum over the ranks. A collective: every rank calls it, in the same
   *  order, with as many values. */
  virtual void sum(std::vector<double>& values) = 0;
};

}  // namespace turnrl::trainer
