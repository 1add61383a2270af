#include "envs/golden.h"

#include <zlib.h>

#include <memory>
#include <stdexcept>

#include "envs/common/json_integer.h"
#include "envs/env_outputs.h"
#include "envs/registry.h"

namespace turnrl::envs {
namespace {

std::string short_dump(const nlohmann::json& value) {
  std::string text = value.dump();
  constexpr size_t kMax = 400;
  if (text.size() > kMax) text = text.substr(0, kMax) + "...";
  return text;
}

bool same_number(const nlohmann::json& a, const nlohmann::json& b) {
  if (a.is_number_float() || b.is_number_float()) return a.get<double>() == b.get<double>();
  if (a.is_number_unsigned() && b.is_number_unsigned()) return a.get<uint64_t>() == b.get<uint64_t>();
  return a.get<int64_t>() == b.get<int64_t>();
}

/** Runs `read` over golden records: what a malformed record makes the replayers raise (a missing or
 *  mistyped field, an env option or action out of range) becomes a std::runtime_error naming `where`. */
template <typename Read>
auto malformed_as_runtime_error(const std::string& where, Read read) -> decltype(read()) {
  try {
    return read();
  } catch (const nlohmann::json::exception& e) {
    throw std::runtime_error(where + ": malformed record: " + e.what());
  } catch (const std::invalid_argument& e) {
    throw std::runtime_error(where + ": malformed record: " + e.what());
  } catch (const std::out_of_range& e) {
    throw std::runtime_error(where + ": malformed record: " + e.what());
  }
}

std::unique_ptr<GoldenReplayer> find_replayer(const nlohmann::json& first_record) {
  for (const auto& family : env_families()) {
    if (!family.replayer) continue;
    auto replayer = malformed_as_runtime_error("the first record", [&] { return family.replayer(first_record); });
    if (replayer) return replayer;
  }
  throw std::runtime_error("the first record matches no known golden format");
}

}  // namespace

nlohmann::json replay_step(Env& env, const nlohmann::json& golden_line) {
  const int action = json_integer<int>(golden_line.at("action"));
  const StepResult result = env.step(action);
  return {{"action_text", env.actions()[action].name},
          {"reward", result.reward},
          {"terminated", result.terminated},
          {"truncated", result.truncated}};
}

EnvApiLine env_api_step(const nlohmann::json& golden_line, nlohmann::json observation) {
  EnvApiLine line;
  line.action = json_integer<int>(golden_line.at("action"));
  line.expected = {{"observation", std::move(observation)},
                   {"reward", golden_line.at("reward")},
                   {"terminated", golden_line.at("terminated")},
                   {"truncated", golden_line.at("truncated")}};
  return line;
}

std::optional<FieldMismatch> first_difference(const nlohmann::json& expected, const nlohmann::json& got,
                                              const std::string& path) {
  if (expected.is_number() && got.is_number()) {
    if (same_number(expected, got)) return std::nullopt;
    return FieldMismatch{path, short_dump(expected), short_dump(got)};
  }
  if (expected.type() != got.type()) return FieldMismatch{path, short_dump(expected), short_dump(got)};
  if (expected.is_array()) {
    if (expected.size() != got.size()) {
      for (size_t i = 0; i < std::min(expected.size(), got.size()); ++i) {
        if (auto diff = first_difference(expected[i], got[i], path + "[" + std::to_string(i) + "]")) return diff;
      }
      return FieldMismatch{path + ".size", std::to_string(expected.size()), std::to_string(got.size())};
    }
    for (size_t i = 0; i < expected.size(); ++i) {
      if (auto diff = first_difference(expected[i], got[i], path + "[" + std::to_string(i) + "]")) return diff;
    }
    return std::nullopt;
  }
  if (expected.is_object()) {
    for (const auto& [key, value] : expected.items()) {
      if (!got.contains(key)) return FieldMismatch{path + "." + key, short_dump(value), "(missing)"};
      if (auto diff = first_difference(value, got.at(key), path + "." + key)) return diff;
    }
    for (const auto& [key, value] : got.items()) {
      if (!expected.contains(key)) return FieldMismatch{path + "." + key, "(missing)", short_dump(value)};
    }
    return std::nullopt;
  }
  if (expected == got) return std::nullopt;
  return FieldMismatch{path, short_dump(expected), short_dump(got)};
}

std::optional<FieldMismatch> first_expected_difference(const nlohmann::json& expected, const nlohmann::json& got,
                                                       const std::string& path) {
  if (!expected.is_object() || !got.is_object()) return first_difference(expected, got, path);
  for (const auto& [key, value] : expected.items()) {
    const std::string field = path.empty() ? key : path + "." + key;
    if (!got.contains(key)) return FieldMismatch{field, short_dump(value), "(missing)"};
    if (auto diff = first_expected_difference(value, got.at(key), field)) return diff;
  }
  return std::nullopt;
}

std::vector<nlohmann::json> read_jsonl(const std::string& path) {
  std::unique_ptr<gzFile_s, int (*)(gzFile)> file(gzopen(path.c_str(), "rb"), gzclose);
  if (!file) throw std::runtime_error(path + ": cannot open");
  std::string content;
  char buffer[1 << 16];
  for (;;) {
    const int n = gzread(file.get(), buffer, sizeof buffer);
    if (n < 0) {
      int code = 0;
      throw std::runtime_error(path + ": corrupt gzip data (" + gzerror(file.get(), &code) + ")");
    }
    if (n == 0) break;
    content.append(buffer, n);
  }
  std::vector<nlohmann::json> records;
  size_t start = 0;
  long line_number = 0;
  while (start < content.size()) {
    size_t end = content.find('\n', start);
    if (end == std::string::npos) end = content.size();
    ++line_number;
    const std::string_view line(content.data() + start, end - start);
    start = end + 1;
    if (line.find_first_not_of(" \t\r") == std::string_view::npos) continue;
    try {
      records.push_back(nlohmann::json::parse(line));
    } catch (const nlohmann::json::exception& e) {  // parse_error, or out_of_range for 1e999
      throw std::runtime_error(path + ":" + std::to_string(line_number) + ": invalid JSON: " + e.what());
    }
    if (!records.back().is_object()) {
      throw std::runtime_error(path + ":" + std::to_string(line_number) + ": a record must be a JSON object");
    }
  }
  if (records.empty()) throw std::runtime_error(path + ": no records");
  return records;
}

void write_jsonl_gz(const std::string& path, const std::vector<nlohmann::json>& records) {
  std::unique_ptr<gzFile_s, int (*)(gzFile)> file(gzopen(path.c_str(), "wb"), gzclose);
  if (!file) throw std::runtime_error(path + ": cannot write");
  for (const auto& record : records) {
    const std::string line = record.dump() + "\n";
    if (gzwrite(file.get(), line.data(), static_cast<unsigned>(line.size())) != static_cast<int>(line.size())) {
      throw std::runtime_error(path + ": write failed");
    }
  }
}

ReplayReport replay_golden_file(const std::string& path) {
  const std::vector<nlohmann::json> records = read_jsonl(path);
  std::unique_ptr<GoldenReplayer> replayer;
  try {
    replayer = find_replayer(records.front());
  } catch (const std::runtime_error& e) {
    throw std::runtime_error(path + ": " + e.what());
  }

  ReplayReport report;
  bool episode_exact = true;
  long step_in_episode = 0;
  auto close_episode = [&] {
    if (report.episodes > 0 && episode_exact) ++report.exact_episodes;
  };
  for (size_t i = 0; i < records.size(); ++i) {
    const nlohmann::json& golden = records[i];
    const long line = static_cast<long>(i) + 1;
    const nlohmann::json type = golden.value("type", nlohmann::json());
    if (type == "reset") {
      close_episode();
      ++report.episodes;
      episode_exact = true;
      step_in_episode = 0;
    } else if (type == "step") {
      if (report.episodes == 0) throw std::runtime_error(path + ":" + std::to_string(line) + ": step before any reset");
      ++step_in_episode;
    } else {
      throw std::runtime_error(path + ":" + std::to_string(line) + ": field 'type' must be 'reset' or 'step'");
    }
    ++report.lines;
    const nlohmann::json ours =
        malformed_as_runtime_error(path + ":" + std::to_string(line), [&] { return replayer->replay(golden); });
    for (const auto& [key, value] : golden.items()) {
      if (replayer->is_input_field(key)) continue;
      const std::optional<nlohmann::json> adjusted = replayer->expected_for(key, golden);
      const nlohmann::json& expected = adjusted ? *adjusted : value;
      std::optional<FieldMismatch> diff;
      if (!ours.contains(key)) {
        diff = FieldMismatch{key, short_dump(expected), "(missing)"};
      } else {
        diff = first_difference(expected, ours.at(key), key);
      }
      if (diff) {
        if (episode_exact && !report.first_mismatch) {
          report.first_mismatch = ReplayMismatch{report.episodes, line, step_in_episode, *diff};
        }
        episode_exact = false;
        break;
      }
    }
  }
  close_episode();
  return report;
}

EnvApiScript env_api_script(const std::vector<nlohmann::json>& records) {
  if (records.empty()) throw std::runtime_error("golden script: no records");
  std::unique_ptr<GoldenReplayer> replayer = find_replayer(records.front());
  EnvApiScript script;
  script.golden_lines = static_cast<long>(records.size());
  for (size_t i = 0; i < records.size(); ++i) {
    std::optional<EnvApiLine> line = malformed_as_runtime_error(
        "golden line " + std::to_string(i + 1), [&] { return replayer->env_api_line(records[i]); });
    if (!line) break;
    if (script.lines.empty() && !line->is_reset) throw std::runtime_error("golden script: step before any reset");
    script.lines.push_back(std::move(*line));
  }
  return script;
}

ReplayReport replay_env_api_script(const EnvApiScript& script, const EnvMaker& make) {
  ReplayReport report;
  std::unique_ptr<Env> env;
  std::string env_id;
  nlohmann::json options;
  bool episode_exact = true;
  long step_in_episode = 0;
  auto close_episode = [&] {
    if (report.episodes > 0 && episode_exact) ++report.exact_episodes;
  };
  for (const EnvApiLine& line : script.lines) {
    ++report.lines;
    nlohmann::json got;
    if (line.is_reset) {
      close_episode();
      ++report.episodes;
      episode_exact = true;
      step_in_episode = 0;
      if (!env || line.env_id != env_id || line.options != options) {
        env = nullptr;  // a remote env frees its slot before the next one is created
        env = make(line.env_id, line.options);
        env_id = line.env_id;
        options = line.options;
      }
      env->reset(line.seed);
      got = episode_outputs(*env);
    } else {
      ++step_in_episode;
      got = step_outputs(*env, env->step(line.action));
    }
    if (auto diff = first_expected_difference(line.expected, got, "")) {
      if (episode_exact && !report.first_mismatch) {
        report.first_mismatch = ReplayMismatch{report.episodes, report.lines, step_in_episode, *diff};
      }
      episode_exact = false;
    }
  }
  close_episode();
  return report;
}

}  // namespace turnrl::envs
