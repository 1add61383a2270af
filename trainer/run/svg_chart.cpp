#include "trainer/run/svg_chart.h"

#include <algorithm>
#include <cstdio>

namespace turnrl::trainer {
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
  std::snprintf(buffer, sizeof buffer, "%.2f", value);
  return buffer;
}

const char* const kColours[] = {"#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1", "#ff9da7"};
const char* colour(size_t i) { return kColours[i % std::size(kColours)]; }

/** The shared frame: canvas, title, horizontal grid with y labels, rotated y label, legend. */
struct Frame {
  double left = 60, top = 40, plot_width, plot_height = 300, y_max;
  std::string svg;

  Frame(const std::string& title, const std::string& y_label, double width, double y_maximum)
      : plot_width(width), y_max(y_maximum > 0 ? y_maximum : 1) {
    const double total_width = left + plot_width + 170, total_height = top + plot_height + 90;
    svg = "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + number(total_width) + "\" height=\"" + number(total_height) +
          "\" font-family=\"sans-serif\" font-size=\"11\">\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
    svg += "<text x=\"" + number(total_width / 2) + "\" y=\"20\" text-anchor=\"middle\" font-size=\"14\">" + escape(title) + "</text>\n";
    for (int tick = 0; tick <= 4; ++tick) {
      const double value = y_max * tick / 4;
      line(left, y(value), left + plot_width, y(value), "#ddd");
      text(left - 5, y(value) + 4, number(value), "end");
    }
    svg += "<text transform=\"translate(15," + number(top + plot_height / 2) + ") rotate(-90)\" text-anchor=\"middle\">" +
           escape(y_label) + "</text>\n";
  }
  double y(double value) const { return top + plot_height * (1.0 - std::clamp(value, 0.0, y_max) / y_max); }
  double bottom() const { return top + plot_height; }
  void line(double x1, double y1, double x2, double y2, const std::string& stroke, const std::string& extra = "") {
    svg += "<line x1=\"" + number(x1) + "\" y1=\"" + number(y1) + "\" x2=\"" + number(x2) + "\" y2=\"" + number(y2) + "\" stroke=\"" +
           stroke + "\"" + extra + "/>\n";
  }
  void text(double x, double y_pos, const std::string& content, const std::string& anchor, const std::string& extra = "") {
    svg += "<text x=\"" + number(x) + "\" y=\"" + number(y_pos) + "\" text-anchor=\"" + anchor + "\"" + extra + ">" + escape(content) +
           "</text>\n";
  }
  void legend(const std::vector<std::string>& names) {
    for (size_t s = 0; s < names.size(); ++s) {
      const double y_pos = top + 15 * s;
      svg += "<rect x=\"" + number(left + plot_width + 15) + "\" y=\"" + number(y_pos) + "\" width=\"10\" height=\"10\" fill=\"" +
             colour(s) + "\"/>\n";
      text(left + plot_width + 30, y_pos + 9, names[s], "start");
    }
  }
  std::string finish() { return svg + "</svg>\n"; }
};

}  // namespace

std::string svg_bar_chart(const std::string& title, const std::string& y_label, double y_max,
                          const std::vector<std::string>& series, const std::vector<BarGroup>& groups) {
  const double bar_width = 18, group_gap = 30;
  const double group_width = std::max<double>(1, series.size()) * bar_width + group_gap;
  Frame frame(title, y_label, std::max(200.0, groups.size() * group_width), y_max);
  for (size_t g = 0; g < groups.size(); ++g) {
    const double x0 = frame.left + g * group_width + group_gap / 2;
    for (size_t s = 0; s < groups[g].values.size() && s < series.size(); ++s) {
      const double x = x0 + s * bar_width, value = groups[g].values[s];
      const double error = s < groups[g].errors.size() ? groups[g].errors[s] : 0.0;
      frame.svg += "<rect x=\"" + number(x) + "\" y=\"" + number(frame.y(value)) + "\" width=\"" + number(bar_width - 2) +
                   "\" height=\"" + number(frame.bottom() - frame.y(value)) + "\" fill=\"" + colour(s) + "\"/>\n";
      const double cx = x + (bar_width - 2) / 2;
      frame.line(cx, frame.y(value - error), cx, frame.y(value + error), "black");
    }
    const double label_x = x0 + (group_width - group_gap) / 2, label_y = frame.bottom() + 15;
    frame.text(label_x, label_y, groups[g].label, "end", " transform=\"rotate(-30 " + number(label_x) + " " + number(label_y) + ")\"");
  }
  frame.legend(series);
  return frame.finish();
}

std::string svg_line_chart(const std::string& title, const std::string& x_label, const std::string& y_label, double y_max,
                           const std::vector<LineSeries>& series, double reference_y) {
  Frame frame(title, y_label, 520, y_max);
  double x_max = 1e-9;
  for (const auto& s : series) {
    for (const auto& [x, y] : s.points) x_max = std::max(x_max, x);
  }
  auto x_of = [&](double x) { return frame.left + frame.plot_width * x / x_max; };
  for (int tick = 0; tick <= 5; ++tick) frame.text(x_of(x_max * tick / 5), frame.bottom() + 18, number(x_max * tick / 5), "middle");
  frame.text(frame.left + frame.plot_width / 2, frame.bottom() + 40, x_label, "middle");
  if (reference_y > 0) frame.line(frame.left, frame.y(reference_y), frame.left + frame.plot_width, frame.y(reference_y), "#c33", " stroke-dasharray=\"4 3\"");
  std::vector<std::string> names;
  for (size_t s = 0; s < series.size(); ++s) {
    std::string points;
    for (const auto& [x, y] : series[s].points) points += number(x_of(x)) + "," + number(frame.y(y)) + " ";
    frame.svg += "<polyline fill=\"none\" stroke=\"" + std::string(colour(s)) + "\" stroke-width=\"" + number(series[s].width) +
                 "\" points=\"" + points + "\"/>\n";
    names.push_back(series[s].name);
  }
  frame.legend(names);
  return frame.finish();
}

}  // namespace turnrl::trainer
