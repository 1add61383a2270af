#pragma once
// What batch statistics need from a data-parallel run: sums over its ranks. A statistic "over the
// batch" (advantage whitening, a loss's token mean, a metric) adds its per-rank partial sums through
// this, so that W ranks compute what one process computes over the combined batch. Torch-free; the
// process group behind it is trainer/dist/distributed.h. A null RankSum* everywhere means one process.
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace turnrl::trainer {

class RankSum {
 public:
  virtual ~RankSum() = default;
  /** Replaces each entry by its sum over the ranks. A collective: every rank calls it, in the same
   *  order, with as many values. */
  virtual void sum(std::vector<double>& values) = 0;
};

/** Named totals that cross the ranks in one message: add each under its name, sum them, read them
 *  back by name. Every rank adds the same names in the same order. */
class RankTotals {
 public:
  /** Adds `value` to the total named `name` (a new name starts at 0). */
  void add(std::string_view name, double value) {
    std::optional<size_t> i = find(name);
    if (!i) {
      names_.emplace_back(name);
      values_.push_back(0.0);
      i = names_.size() - 1;
    }
    values_[*i] += value;
  }
  /** Sums every total over `ranks` (null: one process, nothing to do). */
  void sum_over(RankSum* ranks) {
    if (ranks) ranks->sum(values_);
  }
  double operator[](std::string_view name) const {
    const std::optional<size_t> i = find(name);
    if (!i) throw std::logic_error("RankTotals: no total named '" + std::string(name) + "'");
    return values_[*i];
  }
  /** `numerator / denominator`, 0 when the denominator is not positive. */
  double ratio(std::string_view numerator, std::string_view denominator) const {
    const double d = (*this)[denominator];
    return d > 0 ? (*this)[numerator] / d : 0.0;
  }

 private:
  std::optional<size_t> find(std::string_view name) const {
    for (size_t i = 0; i < names_.size(); ++i) {
      if (names_[i] == name) return i;
    }
    return std::nullopt;
  }

  std::vector<std::string> names_;
  std::vector<double> values_;
};

}  // namespace turnrl::trainer
