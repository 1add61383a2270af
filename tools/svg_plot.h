#pragma once
// A small SVG bar chart with error bars (eval summaries); no plotting dependency.
#include <string>
#include <vector>

namespace turnrl::tools {

struct BarGroup {
  std::string label;            // x-axis group (e.g. an environment)
  std::vector<double> values;   // one bar per series
  std::vector<double> errors;   // half-length of each error bar
};

/** Grouped bars, y from 0 to `y_max`, one colour per series with a legend. */
std::string svg_bar_chart(const std::string& title, const std::string& y_label, double y_max,
                          const std::vector<std::string>& series, const std::vector<BarGroup>& groups);

}  // namespace turnrl::tools
