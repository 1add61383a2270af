#pragma once
// The `train` line of metrics.jsonl: the update's losses, the combined batch's figures (summed over
// the ranks of a data-parallel run) and where the iteration's time went.
#include <chrono>

#include <nlohmann/json.hpp>

#include "trainer/run/collector.h"
#include "trainer/run/time_budget.h"

namespace turnrl::trainer {

struct IterationClock {
  std::chrono::steady_clock::time_point start = std::chrono::steady_clock::now();
  double rollout_seconds = 0;  // collecting, rewards and targets
  double update_seconds = 0;
  double seconds() const { return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(); }
};

/** `update`: ppo_update's metrics, extended into the iteration's line. A collective with `ranks`. */
nlohmann::json iteration_metrics(const TrainConfig& config, int iteration, const Collection& collection, nlohmann::json update,
                                 const IterationClock& clock, const TimeBudget& budget, ProcessGroup* ranks);

/** The one-line progress report of an iteration. */
void log_iteration(const TrainConfig& config, const nlohmann::json& line, double eta_seconds);

}  // namespace turnrl::trainer
