#pragma once
// Timing for the model-side benchmarks (bench llm, bench update): the shortest of repeated runs, and
// the float32 matrix product that defines the machine's peak.
#include <chrono>
#include <functional>
#include <vector>

#include <torch/torch.h>

#include "agents/model/model_config.h"

namespace turnrl::tools {

using Clock = std::chrono::steady_clock;

inline double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

// Timings: the shortest of at least `min_runs` runs after an untimed warm-up, going on while under
// `budget_s` seconds in all (up to 200 rounds): the machine's other work only ever slows a run.
// Figures compared with each other (the forward and the matmul peak) take turns in one window, so a
// quiet or a busy moment of this shared machine falls on both alike.
inline constexpr double kTimingBudgetSeconds = 4.0;

inline std::vector<double> best_seconds_side_by_side(const std::vector<std::function<void()>>& runs, int min_runs, double budget_s) {
  for (const auto& run : runs) run();
  std::vector<double> best(runs.size(), 1e30);
  const auto all = Clock::now();
  for (int r = 0; r < min_runs || (r < 200 && seconds_since(all) < budget_s); ++r) {
    for (size_t i = 0; i < runs.size(); ++i) {
      const auto start = Clock::now();
      runs[i]();
      best[i] = std::min(best[i], seconds_since(start));
    }
  }
  return best;
}

inline double best_seconds(const std::function<void()>& run, int min_runs, double budget_s) {
  return best_seconds_side_by_side({run}, min_runs, budget_s).front();
}

/** The float32 n x n matrix product that defines the machine's peak. */
struct PeakProduct {
  explicit PeakProduct(int64_t n) : n(n), a(torch::randn({n, n})), b(torch::randn({n, n})) {}
  void operator()() const {
    torch::NoGradGuard no_grad;
    torch::mm(a, b);
  }
  double gflops(double seconds) const { return 2.0 * n * n * n / seconds / 1e9; }
  int64_t n;
  torch::Tensor a, b;
};

/** The weights of one decoder layer that multiply every token: attention's projections and the MLP. */
inline double layer_weights(const agents::ModelConfig& config) {
  const double h = config.hidden_size;
  return h * (config.num_attention_heads * config.head_dim()) * 2 + h * (config.num_key_value_heads * config.head_dim()) * 2 +
         3.0 * h * config.intermediate_size;
}

}  // namespace turnrl::tools
