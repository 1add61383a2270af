#pragma once
// The run's clock and its limits: run.minutes bounds PPO's own time; run.total_minutes bounds the
// whole run (format stage and loading included) and keeps back what the next iteration and the
// closing evaluations are expected to take. Torch-free.
#include <chrono>

#include "trainer/config/train_config.h"

namespace turnrl::trainer {

class TimeBudget {
 public:
  /** `elapsed_before`: PPO's seconds in earlier commands of a resumed run; `setup_seconds`: the
   *  first command's time before PPO. The clock starts now. */
  TimeBudget(const TrainConfig::Run& run, double elapsed_before, double setup_seconds);

  /** PPO's seconds so far, earlier commands included. */
  double elapsed() const;
  double setup_seconds() const { return setup_seconds_; }
  /** Counts this command's iterations from `iteration` on (the per-iteration estimate). */
  void start_loop(int iteration);
  /** Whether run.minutes or run.total_minutes is spent at `iteration`, the last evaluation having
   *  taken `last_eval_seconds`. */
  bool out_of_time(int iteration, double last_eval_seconds) const;
  /** Seconds the run is expected to go on from `iteration`. */
  double eta_seconds(int iteration, double last_eval_seconds) const;

 private:
  /** This command's seconds per iteration so far, evaluations and checkpoints included (0 before the first). */
  double seconds_per_iteration(int iteration) const;
  double total_seconds_left(int iteration, double last_eval_seconds) const;

  const TrainConfig::Run& run_;
  double elapsed_before_, setup_seconds_;
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
  int first_iteration_ = 0;
  double loop_start_ = 0;
};

}  // namespace turnrl::trainer
