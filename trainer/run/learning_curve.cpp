#include "trainer/run/learning_curve.h"

#include <cstdio>
#include <fstream>

#include "trainer/run/svg_chart.h"

namespace turnrl::trainer {

void write_learning_curve_svg(const std::string& path, const std::vector<EvalPoint>& points,
                              const std::vector<std::string>& tasks, const std::string& decoding) {
  std::vector<LineSeries> series(1);
  series[0].name = tasks.size() == 1 ? tasks.front() : "mean of " + std::to_string(tasks.size()) + " tasks";
  series[0].width = 2.0;
  for (const auto& p : points) series[0].points.push_back({p.minutes, p.progression});
  if (tasks.size() > 1) {
    for (size_t k = 0; k < tasks.size(); ++k) {
      LineSeries task{tasks[k], {}, 1.2};
      for (const auto& p : points) {
        if (k < p.task_progression.size()) task.points.push_back({p.minutes, p.task_progression[k]});
      }
      series.push_back(std::move(task));
    }
  }
  const std::string svg = svg_line_chart(series[0].name + ": " + decoding + " progression on held-out seeds", "minutes", "progression", 1.0, series, 0.95);
  {
    std::ofstream out(path + ".tmp");
    out << svg;
  }
  std::rename((path + ".tmp").c_str(), path.c_str());
}

}  // namespace turnrl::trainer
