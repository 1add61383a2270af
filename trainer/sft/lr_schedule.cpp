#include "trainer/sft/lr_schedule.h"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <stdexcept>

namespace turnrl::trainer {

const std::vector<std::string>& lr_schedules() {
  static const std::vector<std::string> names = {"constant", "cosine"};
  return names;
}

double scheduled_lr(const std::string& schedule, double base_lr, size_t step, size_t total_steps) {
  if (schedule == "constant") return base_lr;
  if (schedule == "cosine") {
    const double progress = static_cast<double>(step) / static_cast<double>(std::max<size_t>(1, total_steps));
    return base_lr * 0.5 * (1.0 + std::cos(std::numbers::pi * progress));
  }
  throw std::invalid_argument("unknown learning-rate schedule '" + schedule + "' (constant or cosine)");
}

}  // namespace turnrl::trainer
