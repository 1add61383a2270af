#include "trainer/run/time_budget.h"

#include <algorithm>

namespace turnrl::trainer {

TimeBudget::TimeBudget(const TrainConfig::Run& run, double elapsed_before, double setup_seconds)
    : run_(run), elapsed_before_(elapsed_before), setup_seconds_(setup_seconds) {}

double TimeBudget::elapsed() const {
  return elapsed_before_ + std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
}

void TimeBudget::start_loop(int iteration) {
  first_iteration_ = iteration;
  loop_start_ = elapsed();
}

double TimeBudget::seconds_per_iteration(int iteration) const {
  const int done = iteration - first_iteration_;
  return done > 0 ? (elapsed() - loop_start_) / done : 0.0;
}

double TimeBudget::total_seconds_left(int iteration, double last_eval_seconds) const {
  // The final evaluation is expected to take the last one's time, scaled by its seeds.
  const double final_share = run_.eval_episodes > 0 ? static_cast<double>(run_.final_episodes()) / run_.eval_episodes : 0.0;
  const double closing = last_eval_seconds * (1 + final_share);
  return run_.total_minutes * 60.0 - setup_seconds_ - elapsed() - seconds_per_iteration(iteration) - closing;
}

bool TimeBudget::out_of_time(int iteration, double last_eval_seconds) const {
  return (run_.minutes > 0 && elapsed() >= run_.minutes * 60.0) ||
         (run_.total_minutes > 0 && total_seconds_left(iteration, last_eval_seconds) <= 0);
}

double TimeBudget::eta_seconds(int iteration, double last_eval_seconds) const {
  double eta = (run_.iterations - iteration) * seconds_per_iteration(iteration);
  if (run_.minutes > 0) eta = std::min(eta, run_.minutes * 60.0 - elapsed());
  if (run_.total_minutes > 0) eta = std::min(eta, total_seconds_left(iteration, last_eval_seconds));
  return std::max(0.0, eta);
}

}  // namespace turnrl::trainer
