#pragma once
// Learning-rate schedules of the supervised stage (trainer/sft/sft.h); torch-free, so configs check
// the names here.
#include <cstddef>
#include <string>
#include <vector>

namespace turnrl::trainer {

/** "constant", and "cosine": from the base rate down to 0 over a run's steps, so the model a run
 *  ends with is not one noisy step of a high rate. */
const std::vector<std::string>& lr_schedules();

/** The rate of step `step` (0-based) of `total_steps`; std::invalid_argument for an unknown schedule. */
double scheduled_lr(const std::string& schedule, double base_lr, size_t step, size_t total_steps);

}  // namespace turnrl::trainer
