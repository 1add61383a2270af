#pragma once
// The one YAML validator behind every config (train, eval, play): each key read is checked for
// type and range, unknown and duplicate keys are refused, and every error has one format,
// `file:line: key: problem` (std::invalid_argument), raised before any work starts. A value set on
// the command line (`--set section.key=value`) is named `--set` instead of a file and line.
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <yaml-cpp/yaml.h>

namespace turnrl::trainer {

/** Parses `path`; refuses duplicate keys at any depth (YAML itself would keep the first silently). */
YAML::Node load_yaml_file(const std::string& path);

/** Sets each `section.key=value` of `overrides` in `root` (the value parsed as YAML: `[a, b]` is a
 *  list), so the loader validates it as it validates the file's own keys. */
void apply_overrides(YAML::Node& root, const std::vector<std::string>& overrides);

/** Old key paths -> new ones (`models[].sight` -> `models[].expert_sight`; `[]` stands for any index). */
using KeyRenames = std::map<std::string, std::string>;

/** A read check: the test and the rule a failing value breaks ("must be > 0"). */
template <typename T>
struct Check {
  std::function<bool(const T&)> test;
  std::string rule;
  bool operator()(const T& value) const { return !test || test(value); }
};

/** One mapping of a config file, read key by key. */
class ConfigSection {
 public:
  /** `node` may be undefined (an absent section: every key keeps its default). `path` names the
   *  mapping in messages ("turn", "models[0]"; empty for the top level). */
  ConfigSection(std::string file, YAML::Node node, std::string path, const KeyRenames* renames = nullptr);

  /** Reads `key` into `out` when present, then checks it. */
  template <typename T>
  void read(const std::string& key, T& out, const Check<T>& check = {}) {
    const YAML::Node value = take(key);
    if (!value) return;
    out = convert<T>(key, value);
    if (!check(out)) fail(key, check.rule);
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
  /** Present with a value (`key:` alone counts as absent, as for read). */
  bool has_value(const std::string& key) const { return has(key) && !node_[key].IsNull(); }
  /** Whether the file writes this mapping (a `--set` override alone does not). */
  bool written() const { return node_.IsDefined() && !node_.Mark().is_null(); }

  /** Refuses keys nobody read, naming the new name of a renamed one; call after the last read. */
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
  const KeyRenames* renames_;
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

/** Common checks; `note` ends the rule in parentheses ("seconds": "must be > 0 (seconds)"). */
std::string with_note(std::string rule, const std::string& note);
template <typename T>
Check<T> positive(const std::string& note = "") {
  return {[](const T& v) { return v > 0; }, with_note("must be > 0", note)};
}
template <typename T>
Check<T> non_negative(const std::string& note = "") {
  return {[](const T& v) { return v >= 0; }, with_note("must be >= 0", note)};
}
Check<double> unit_interval();
/** [0, 1): a share that may not be all. */
Check<double> half_open_unit_interval();
/** "a, b or c" for messages. */
std::string list_names(const std::vector<std::string>& names);

}  // namespace turnrl::trainer
