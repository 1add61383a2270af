#pragma once
// Learning-rate schedules and the stepping of the supervised stage (trainer/sft/sft.h); torch-free,
// so configs name them here.
#include <cstddef>
#include <string>
#include <vector>

#include "trainer/config/enum_names.h"

namespace turnrl::trainer {

/** constant, and cosine: from the base rate down to 0 over a run's steps, so the model a run
 *  ends with is not one noisy step of a high rate. */
enum class LrSchedule { kConstant, kCosine };
template <>
struct EnumNames<LrSchedule> {
  static const std::vector<std::string>& names() {
    static const std::vector<std::string> n = {"constant", "cosine"};
    return n;
  }
};

/** How a supervised fine-tuning steps: declared once, the `format:` section's keys (TrainConfig::Format)
 *  and `turnrl sft --set format.KEY=VALUE` read into it, and run_sft (SftSettings) steps by it. */
struct FineTuning {
  int epochs = 2;
  double lr = 1e-3;  // AdamW's
  LrSchedule lr_schedule = LrSchedule::kConstant;
  int batch_size = 32;
};

/** The rate of step `step` (0-based) of `total_steps`. */
double scheduled_lr(LrSchedule schedule, double base_lr, size_t step, size_t total_steps);

}  // namespace turnrl::trainer
