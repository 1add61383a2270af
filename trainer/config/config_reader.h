#pragma once
// The one YAML validator behind every config (train, eval, play): each key read is checked for
// type and range, unknown and duplicate keys are refused, and every error has one format,
// `file:line: key: problem` (std::invalid_argument), raised before any work starts.
#include <functional>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <yaml-cpp/yaml.h>

namespace turnrl::trainer {

/** Parses `path`; refuses duplicate keys at any depth (YAML itself would keep the first silently). */
YAML::Node load_yaml_file(const std::string& path);

/** One mapping of a config file, read key by key. */
class ConfigSection {
 public:
  /** `node` may be undefined (an absent section: every key keeps its default). `path` names the
   *  mapping in messages ("turn", "models[0]"; empty for the top level). */
  ConfigSection(std::string file, YAML::Node node, std::string path);

  /** Reads `key` into `out` when present. `valid` (with its `rule`, e.g. "must be > 0") checks the value. */
  template <typename T>
  void read(const std::string& key, T& out, const std::function<bool(const T&)>& valid = nullptr, const std::string& rule = "") {
    const YAML::Node value = take(key);
    if (!value) return;
    out = convert<T>(key, value);
    if (valid && !valid(out)) fail(key, rule);
  }
  /** A string or a non-empty list of strings. */
  void read_string_list(const std::string& key, std::vector<std::string>& out);
  /** A mapping read as JSON (scalars parsed as JSON where they parse, else kept as strings). */
  void read_json(const std::string& key, nlohmann::json& out);
  /** A nested mapping (absent: an empty section). */
  ConfigSection section(const std::string& key);
  /** A list of mappings. */
  std::vector<ConfigSection> section_list(const std::string& key);
  bool has(const std::string& key) const { return node_.IsDefined() && node_.IsMap() && node_[key].IsDefined(); }

  /** Refuses keys nobody read; call after the last read. */
  void finish() const;
  /** `file:line: path.key: problem`, at the key's line (the section's when the key is absent). */
  [[noreturn]] void fail(const std::string& key, const std::string& problem) const;
  std::string key_path(const std::string& key) const { return path_.empty() ? key : path_ + "." + key; }
  const std::string& file() const { return file_; }

 private:
  YAML::Node take(const std::string& key);
  template <typename T>
  T convert(const std::string& key, const YAML::Node& value) const;

  std::string file_;
  YAML::Node node_;
  std::string path_;
  std::set<std::string> read_;
};

template <typename T>
T ConfigSection::convert(const std::string& key, const YAML::Node& value) const {
  if (!value.IsScalar()) fail(key, "must be a single value");
  // yaml-cpp would wrap "-1" into a huge unsigned number: refuse the sign first.
  if constexpr (std::is_unsigned_v<T> && !std::is_same_v<T, bool>) {
    if (!value.Scalar().empty() && value.Scalar()[0] == '-') fail(key, "must be >= 0, got " + value.Scalar());
  }
  try {
    return value.as<T>();
  } catch (const YAML::Exception&) {
    fail(key, "has the wrong type ('" + value.Scalar() + "')");
  }
}

/** Common checks for ConfigSection::read. */
template <typename T>
std::function<bool(const T&)> positive() {
  return [](const T& v) { return v > 0; };
}
template <typename T>
std::function<bool(const T&)> non_negative() {
  return [](const T& v) { return v >= 0; };
}
std::function<bool(const double&)> unit_interval();
/** [0, 1): a share that may not be all. */
std::function<bool(const double&)> half_open_unit_interval();
std::function<bool(const std::string&)> one_of(const std::vector<std::string>& names);
/** "a, b or c" for messages. */
std::string list_names(const std::vector<std::string>& names);

}  // namespace turnrl::trainer
