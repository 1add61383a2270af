#pragma once
// A small SVG line chart of evaluation success against wall-clock minutes (no plotting dependency).
#include <string>
#include <vector>

#include "trainer/checkpoint.h"

namespace turnrl::trainer {

void write_learning_curve_svg(const std::string& path, const std::vector<EvalPoint>& points, const std::string& title);

}  // namespace turnrl::trainer
