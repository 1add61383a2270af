#include "trainer/learning_curve.h"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <iterator>

namespace turnrl::trainer {

void write_learning_curve_svg(const std::string& path, const std::vector<EvalPoint>& points,
                              const std::vector<std::string>& tasks) {
  const std::string title = tasks.size() == 1 ? tasks.front() : "mean of " + std::to_string(tasks.size()) + " tasks";
  constexpr double kW = 640, kH = 400, kLeft = 60, kRight = 20, kTop = 40, kBottom = 50;
  double max_minutes = 1.0;
  for (const auto& p : points) max_minutes = std::max(max_minutes, p.minutes);
  auto x = [&](double minutes) { return kLeft + (kW - kLeft - kRight) * minutes / max_minutes; };
  auto y = [&](double success) { return kH - kBottom - (kH - kTop - kBottom) * success; };
  std::string svg = "<svg xmlns='http://www.w3.org/2000/svg' width='640' height='400' font-family='sans-serif' font-size='12'>\n";
  svg += "<rect width='100%' height='100%' fill='white'/>\n";
  char buf[256];
  std::snprintf(buf, sizeof buf, "<text x='%g' y='24' font-size='15'>%s: greedy success on held-out seeds</text>\n", kLeft, title.c_str());
  svg += buf;
  for (int i = 0; i <= 4; ++i) {
    const double s = i / 4.0;
    std::snprintf(buf, sizeof buf, "<line x1='%g' y1='%g' x2='%g' y2='%g' stroke='#ddd'/><text x='%g' y='%g' text-anchor='end'>%.2f</text>\n",
                  kLeft, y(s), kW - kRight, y(s), kLeft - 6, y(s) + 4, s);
    svg += buf;
  }
  for (int i = 0; i <= 5; ++i) {
    const double m = max_minutes * i / 5.0;
    std::snprintf(buf, sizeof buf, "<text x='%g' y='%g' text-anchor='middle'>%.1f</text>\n", x(m), kH - kBottom + 18, m);
    svg += buf;
  }
  std::snprintf(buf, sizeof buf, "<text x='%g' y='%g' text-anchor='middle'>minutes</text>\n", (kLeft + kW - kRight) / 2, kH - 12);
  svg += buf;
  std::snprintf(buf, sizeof buf, "<line x1='%g' y1='%g' x2='%g' y2='%g' stroke='#c33' stroke-dasharray='4 3'/>\n", kLeft, y(0.95),
                kW - kRight, y(0.95));
  svg += buf;
  if (tasks.size() > 1) {
    static const char* const kColours[] = {"#e69f00", "#009e73", "#cc79a7", "#56b4e9", "#d55e00", "#999999"};
    for (size_t k = 0; k < tasks.size(); ++k) {
      const char* colour = kColours[k % std::size(kColours)];
      std::string task_line;
      for (const auto& p : points) {
        if (k >= p.task_success.size()) continue;
        std::snprintf(buf, sizeof buf, "%g,%g ", x(p.minutes), y(p.task_success[k]));
        task_line += buf;
      }
      svg += "<polyline fill='none' stroke='" + std::string(colour) + "' stroke-width='1.2' points='" + task_line + "'/>\n";
      std::snprintf(buf, sizeof buf, "<text x='%g' y='%g' fill='%s'>%s</text>\n", kW - kRight - 150, kTop + 14 + 14.0 * k, colour,
                    tasks[k].c_str());
      svg += buf;
    }
  }
  std::string line;
  for (const auto& p : points) {
    std::snprintf(buf, sizeof buf, "%g,%g ", x(p.minutes), y(p.success));
    line += buf;
  }
  svg += "<polyline fill='none' stroke='#2266cc' stroke-width='2' points='" + line + "'/>\n";
  for (const auto& p : points) {
    std::snprintf(buf, sizeof buf, "<circle cx='%g' cy='%g' r='3' fill='#2266cc'/>\n", x(p.minutes), y(p.success));
    svg += buf;
  }
  svg += "</svg>\n";
  std::ofstream(path + ".tmp") << svg;
  std::rename((path + ".tmp").c_str(), path.c_str());
}

}  // namespace turnrl::trainer
