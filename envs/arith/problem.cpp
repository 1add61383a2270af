#include "envs/arith/problem.h"

#include <algorithm>
#include <stdexcept>

#include "envs/common/numpy_random.h"

namespace turnrl::envs::arith {
namespace {

constexpr Op kOps[] = {Op::kAdd, Op::kSubtract, Op::kMultiply, Op::kDivide};

/** The operands of `op` that keep `value` an exact result in [1, max_value], ascending. */
std::vector<int> valid_operands(Op op, int value, int max_value) {
  const bool additive = op == Op::kAdd || op == Op::kSubtract;
  std::vector<int> operands;
  for (int operand = additive ? 1 : 2; operand <= (additive ? kMaxAddend : kMaxFactor); ++operand) {
    const Operation candidate{op, operand};
    if (op == Op::kDivide && value % operand != 0) continue;
    const int result = candidate.apply(value);
    if (result >= 1 && result <= max_value) operands.push_back(operand);
  }
  return operands;
}

}  // namespace

std::string Operation::text() const {
  switch (op) {
    case Op::kAdd: return "add " + std::to_string(operand);
    case Op::kSubtract: return "subtract " + std::to_string(operand);
    case Op::kMultiply: return "multiply by " + std::to_string(operand);
    case Op::kDivide: return "divide by " + std::to_string(operand);
  }
  return {};
}

int Operation::apply(int value) const {
  switch (op) {
    case Op::kAdd: return value + operand;
    case Op::kSubtract: return value - operand;
    case Op::kMultiply: return value * operand;
    case Op::kDivide: return value / operand;
  }
  return value;
}

std::string Problem::statement() const {
  std::string text = "Start with " + std::to_string(start);
  for (size_t i = 0; i < operations.size(); ++i) {
    text += i + 1 == operations.size() ? ", then " : ", ";
    text += operations[i].text();
  }
  return text + ".";
}

Problem generate_problem(uint64_t seed, int steps, int max_value) {
  if (steps < 1 || max_value < 2) throw std::invalid_argument("arith: need steps >= 1 and max_value >= 2");
  Pcg64Generator rng(seed);
  Problem problem;
  problem.start = static_cast<int>(rng.integers(1, std::min(kMaxStart, max_value) + 1));
  int value = problem.start;
  for (int step = 0; step < steps; ++step) {
    std::vector<std::pair<Op, std::vector<int>>> choices;
    for (Op op : kOps) {
      std::vector<int> operands = valid_operands(op, value, max_value);
      if (!operands.empty()) choices.emplace_back(op, std::move(operands));
    }
    const auto& [op, operands] = choices[rng.integers(0, static_cast<int64_t>(choices.size()))];
    const Operation operation{op, operands[rng.integers(0, static_cast<int64_t>(operands.size()))]};
    value = operation.apply(value);
    problem.operations.push_back(operation);
    problem.results.push_back(value);
  }
  return problem;
}

}  // namespace turnrl::envs::arith
