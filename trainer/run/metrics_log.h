#pragma once
// RUN/metrics.jsonl (one JSON line per iteration and evaluation) and RUN/config.yaml. Rank 0
// writes the run folder; on the other ranks a MetricsLog writes nothing. Torch-free.
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

namespace turnrl::trainer {

class MetricsLog {
 public:
  /** Writes `config_yaml` to RUN/config.yaml. A run resumed at `iteration` > 0 continues the metrics
   *  file, cut back to its checkpoint; a fresh run starts it anew. */
  MetricsLog(const std::string& run_dir, const std::string& config_yaml, int iteration, bool writer);
  bool writer() const { return writer_; }
  /** Appends `line` and flushes it (a crash loses no finished iteration). */
  void write(const nlohmann::json& line);

 private:
  bool writer_;
  std::ofstream file_;
};

}  // namespace turnrl::trainer
