#pragma once
// Procedurally generated multi-step integer problems: a start value and a chain of operations
// ("add 5", "multiply by 3", ...) whose every intermediate result stays in [1, max_value].
#include <cstdint>
#include <string>
#include <vector>

namespace turnrl::envs::arith {

enum class Op : uint8_t { kAdd, kSubtract, kMultiply, kDivide };

struct Operation {
  Op op = Op::kAdd;
  int operand = 0;
  /** "add 5", "subtract 2", "multiply by 3", "divide by 4". */
  std::string text() const;
  int apply(int value) const;
};

struct Problem {
  int start = 0;
  std::vector<Operation> operations;
  /** results[i]: the value after operations[0..i]; the last one is the answer. */
  std::vector<int> results;

  int answer() const { return results.back(); }
  /** "Start with 7, add 5, multiply by 3, then subtract 4." */
  std::string statement() const;
};

/** Operand ranges: add/subtract 1..kMaxAddend, multiply/divide 2..kMaxFactor; start 1..kMaxStart. */
inline constexpr int kMaxAddend = 20;
inline constexpr int kMaxFactor = 9;
inline constexpr int kMaxStart = 50;

/**
 * The problem for `seed`, drawn from numpy's `Generator(PCG64(seed))` (envs/common/numpy_random.h,
 * portable bit for bit) in this order: the start value, integers(1, min(kMaxStart, max_value) + 1);
 * then for each operation the kind, integers(0, k) over the k kinds (in Op order) that have an operand
 * keeping the result in [1, max_value] and exact (division), then the operand, integers(0, m) over
 * those m operands in increasing order. Add and subtract always leave one of them possible, so
 * every draw has a choice. Requires steps >= 1 and max_value >= 2.
 */
Problem generate_problem(uint64_t seed, int steps, int max_value);

}  // namespace turnrl::envs::arith
