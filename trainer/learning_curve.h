#pragma once
// A small SVG line chart of evaluation success against wall-clock minutes (no plotting dependency):
// the mean over the tasks, and one thinner line per task when there are several.
#include <string>
#include <vector>

#include "trainer/checkpoint.h"

namespace turnrl::trainer {

void write_learning_curve_svg(const std::string& path, const std::vector<EvalPoint>& points,
                              const std::vector<std::string>& tasks);

}  // namespace turnrl::trainer
