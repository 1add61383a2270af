#pragma once
// A small SVG line chart of evaluation progression (BALROG's measure; success for goal tasks)
// against wall-clock minutes (no plotting dependency): the mean over the tasks, and one thinner line
// per task when there are several.
#include <string>
#include <vector>

namespace turnrl::trainer {

struct EvalPoint {
  double minutes = 0.0;
  int iteration = 0;
  double progression = 0.0;              // mean over the tasks
  std::vector<double> task_progression;  // per task, in env.id order
};

void write_learning_curve_svg(const std::string& path, const std::vector<EvalPoint>& points,
                              const std::vector<std::string>& tasks, const std::string& decoding);

}  // namespace turnrl::trainer
