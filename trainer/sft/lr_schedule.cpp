#include "trainer/sft/lr_schedule.h"

#include <algorithm>
#include <cmath>
#include <numbers>

namespace turnrl::trainer {

double scheduled_lr(LrSchedule schedule, double base_lr, size_t step, size_t total_steps) {
  if (schedule == LrSchedule::kConstant) return base_lr;
  const double progress = static_cast<double>(step) / static_cast<double>(std::max<size_t>(1, total_steps));
  return base_lr * 0.5 * (1.0 + std::cos(std::numbers::pi * progress));
}

}  // namespace turnrl::trainer
