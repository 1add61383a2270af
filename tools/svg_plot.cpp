#include "tools/svg_plot.h"

#include <algorithm>
#include <cstdio>

namespace turnrl::tools {
namespace {

std::string escape(const std::string& text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '&': out += "&amp;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string number(double value) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.1f", value);
  return buffer;
}

const char* const kColours[] = {"#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1", "#ff9da7"};

}  // namespace

std::string svg_bar_chart(const std::string& title, const std::string& y_label, double y_max,
                          const std::vector<std::string>& series, const std::vector<BarGroup>& groups) {
  const double left = 60, top = 40, plot_height = 300, bar_width = 18, group_gap = 30;
  const double group_width = std::max<double>(1, series.size()) * bar_width + group_gap;
  const double plot_width = std::max(200.0, groups.size() * group_width);
  const double width = left + plot_width + 160, height = top + plot_height + 90;
  if (y_max <= 0) y_max = 1;
  auto y_of = [&](double value) { return top + plot_height * (1.0 - std::clamp(value, 0.0, y_max) / y_max); };

  std::string svg = "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + number(width) + "\" height=\"" + number(height) +
                    "\" font-family=\"sans-serif\" font-size=\"11\">\n";
  svg += "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  svg += "<text x=\"" + number(width / 2) + "\" y=\"20\" text-anchor=\"middle\" font-size=\"14\">" + escape(title) + "</text>\n";
  for (int tick = 0; tick <= 4; ++tick) {
    const double value = y_max * tick / 4, y = y_of(value);
    svg += "<line x1=\"" + number(left) + "\" x2=\"" + number(left + plot_width) + "\" y1=\"" + number(y) + "\" y2=\"" +
           number(y) + "\" stroke=\"#ddd\"/>\n";
    svg += "<text x=\"" + number(left - 5) + "\" y=\"" + number(y + 4) + "\" text-anchor=\"end\">" + number(value) + "</text>\n";
  }
  svg += "<text transform=\"translate(15," + number(top + plot_height / 2) + ") rotate(-90)\" text-anchor=\"middle\">" +
         escape(y_label) + "</text>\n";
  for (size_t g = 0; g < groups.size(); ++g) {
    const double x0 = left + g * group_width + group_gap / 2;
    for (size_t s = 0; s < groups[g].values.size() && s < series.size(); ++s) {
      const double x = x0 + s * bar_width, value = groups[g].values[s];
      const double error = s < groups[g].errors.size() ? groups[g].errors[s] : 0.0;
      svg += "<rect x=\"" + number(x) + "\" y=\"" + number(y_of(value)) + "\" width=\"" + number(bar_width - 2) +
             "\" height=\"" + number(top + plot_height - y_of(value)) + "\" fill=\"" + kColours[s % 8] + "\"/>\n";
      const double cx = x + (bar_width - 2) / 2;
      svg += "<line x1=\"" + number(cx) + "\" x2=\"" + number(cx) + "\" y1=\"" + number(y_of(value - error)) + "\" y2=\"" +
             number(y_of(value + error)) + "\" stroke=\"black\"/>\n";
    }
    svg += "<text x=\"" + number(x0 + (group_width - group_gap) / 2) + "\" y=\"" + number(top + plot_height + 15) +
           "\" text-anchor=\"end\" transform=\"rotate(-30 " + number(x0 + (group_width - group_gap) / 2) + " " +
           number(top + plot_height + 15) + ")\">" + escape(groups[g].label) + "</text>\n";
  }
  for (size_t s = 0; s < series.size(); ++s) {
    const double y = top + 15 * s;
    svg += "<rect x=\"" + number(left + plot_width + 15) + "\" y=\"" + number(y) + "\" width=\"10\" height=\"10\" fill=\"" +
           kColours[s % 8] + "\"/>\n";
    svg += "<text x=\"" + number(left + plot_width + 30) + "\" y=\"" + number(y + 9) + "\">" + escape(series[s]) + "</text>\n";
  }
  svg += "</svg>\n";
  return svg;
}

}  // namespace turnrl::tools
