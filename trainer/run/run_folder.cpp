#include "trainer/run/run_folder.h"

#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include <nlohmann/json.hpp>

namespace turnrl::trainer {

namespace fs = std::filesystem;

void swap_in_folder(const std::string& temp, const std::string& dir) {
  const std::string old = dir + ".old";
  if (fs::exists(dir)) {
    fs::remove_all(old);
    fs::rename(dir, old);
  }
  fs::rename(temp, dir);
  fs::remove_all(old);
}

std::string complete_folder(const std::string& dir, const std::string& marker) {
  if (fs::exists(fs::path(dir) / marker)) return dir;
  if (fs::exists(fs::path(dir + ".old") / marker)) return dir + ".old";
  return "";
}

std::string find_checkpoint(const std::string& run_or_checkpoint) {
  std::string path = run_or_checkpoint;
  while (path.size() > 1 && path.back() == '/') path.pop_back();
  for (const std::string& candidate : {path, path + "/checkpoint"}) {
    const std::string found = complete_folder(candidate, "state.json");
    if (!found.empty()) return found;
  }
  throw std::invalid_argument(run_or_checkpoint + ": no checkpoint here (expected RUN/checkpoint/state.json)");
}

std::string latest_model(const std::string& run_dir) {
  for (const std::string& candidate : {run_dir + "/model", run_dir + "/checkpoint/actor"}) {
    const std::string found = complete_folder(candidate, "model.safetensors");
    if (!found.empty()) return found;
  }
  const std::string old_checkpoint = complete_folder(run_dir + "/checkpoint.old/actor", "model.safetensors");
  if (!old_checkpoint.empty()) return old_checkpoint;
  throw std::invalid_argument(run_dir + ": the run has no model yet (neither model/ nor checkpoint/actor/)");
}

std::string run_config_path(const std::string& run_dir) {
  const std::string path = run_dir + "/config.yaml";
  if (!fs::exists(path)) throw std::invalid_argument(run_dir + ": not a run folder (no config.yaml)");
  return path;
}

void truncate_metrics(const std::string& path, int iteration) {
  std::ifstream in(path);
  if (!in) return;
  std::ostringstream kept;
  std::string line;
  while (std::getline(in, line)) {
    if (in.eof()) break;  // a last line without its newline was torn by the interruption
    const nlohmann::json record = nlohmann::json::parse(line, nullptr, false);
    if (record.is_discarded()) continue;
    if (record.contains("iteration") && record["iteration"].is_number() && record["iteration"].get<int>() > iteration) continue;
    kept << line << "\n";
  }
  in.close();
  const std::string temp = path + ".tmp";
  {
    std::ofstream out(temp, std::ios::trunc);
    out << kept.str();
    if (!out.flush()) throw std::runtime_error(temp + ": write failed");
  }
  fs::rename(temp, path);
}

}  // namespace turnrl::trainer
