#pragma once
// The one SVG writer (no plotting dependency): grouped bar charts with error bars (evaluation
// summaries) and line charts (learning curves), on one frame: title, y grid and legend.
#include <string>
#include <vector>

namespace turnrl::trainer {

struct BarGroup {
  std::string label;            // x-axis group (e.g. an environment)
  std::vector<double> values;   // one bar per series
  std::vector<double> errors;   // half-length of each error bar
};

/** Grouped bars, y from 0 to `y_max`, one colour per series with a legend. */
std::string svg_bar_chart(const std::string& title, const std::string& y_label, double y_max,
                          const std::vector<std::string>& series, const std::vector<BarGroup>& groups);

struct LineSeries {
  std::string name;
  std::vector<std::pair<double, double>> points;  // (x, y)
  double width = 1.2;
};

/** Lines over x from 0 to the largest x, y from 0 to `y_max`; `reference_y` (if > 0) is dashed. */
std::string svg_line_chart(const std::string& title, const std::string& x_label, const std::string& y_label, double y_max,
                           const std::vector<LineSeries>& series, double reference_y = 0.0);

}  // namespace turnrl::trainer
