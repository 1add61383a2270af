#pragma once
// A small SVG line chart of evaluation success against wall-clock minutes (no plotting dependency):
// the mean over the tasks, and one thinner line per task when there are several.
#include <string>
#include <vector>

namespace turnrl::trainer {

struct EvalPoint {
  double minutes = 0.0;
  int iteration = 0;
  double success = 0.0;              // mean over the tasks
  std::vector<double> task_success;  // per task, in env.id order
};

void write_learning_curve_svg(const std::string& path, const std::vector<EvalPoint>& points,
                              const std::vector<std::string>& tasks);

}  // namespace turnrl::trainer
