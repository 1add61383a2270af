#include "trainer/run/metrics_log.h"

#include <filesystem>

#include "trainer/run/run_folder.h"

namespace turnrl::trainer {

MetricsLog::MetricsLog(const std::string& run_dir, const std::string& config_yaml, int iteration, bool writer) : writer_(writer) {
  if (!writer_) return;
  std::filesystem::create_directories(run_dir);
  std::ofstream(run_dir + "/config.yaml") << config_yaml;
  const std::string path = run_dir + "/metrics.jsonl";
  if (iteration > 0) truncate_metrics(path, iteration);
  file_.open(path, iteration > 0 ? std::ios::app : std::ios::trunc);
}

void MetricsLog::write(const nlohmann::json& line) {
  if (writer_) file_ << line.dump() << "\n" << std::flush;
}

}  // namespace turnrl::trainer
