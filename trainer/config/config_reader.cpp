#include "trainer/config/config_reader.h"

#include <stdexcept>

namespace turnrl::trainer {
namespace {

std::string line_of(const YAML::Node& node) { return std::to_string(node.Mark().line + 1); }

/** `file:line`, or `--set` for a node an override made (it has no place in the file). */
std::string where(const std::string& file, const YAML::Node& node) {
  return node.Mark().is_null() ? "--set" : file + ":" + line_of(node);
}

/** A copy of `node` without marks, so that messages name it `--set`. */
YAML::Node unmarked(const YAML::Node& node) {
  if (node.IsScalar()) return YAML::Node(node.Scalar());
  YAML::Node copy(node.Type());
  if (node.IsSequence()) {
    for (const auto& item : node) copy.push_back(unmarked(item));
  } else if (node.IsMap()) {
    for (const auto& entry : node) copy[entry.first.Scalar()] = unmarked(entry.second);
  }
  return copy;
}

/** `models[3].sight` -> `models[].sight`. */
std::string without_indices(const std::string& path) {
  std::string out;
  for (size_t i = 0; i < path.size(); ++i) {
    out += path[i];
    if (path[i] == '[') i = path.find(']', i) - 1;
  }
  return out;
}

void refuse_duplicate_keys(const std::string& file, const YAML::Node& node) {
  if (node.IsMap()) {
    std::set<std::string> seen;
    for (const auto& entry : node) {
      const std::string key = entry.first.Scalar();
      if (!seen.insert(key).second) {
        throw std::invalid_argument(file + ":" + line_of(entry.first) + ": " + key + ": duplicate key");
      }
      refuse_duplicate_keys(file, entry.second);
    }
  } else if (node.IsSequence()) {
    for (const auto& item : node) refuse_duplicate_keys(file, item);
  }
}

}  // namespace

YAML::Node load_yaml_file(const std::string& path) {
  YAML::Node root;
  try {
    root = YAML::LoadFile(path);
  } catch (const YAML::BadFile&) {
    throw std::invalid_argument(path + ": cannot open");
  } catch (const YAML::Exception& e) {
    throw std::invalid_argument(path + ":" + std::to_string(e.mark.line + 1) + ": invalid YAML: " + e.msg);
  }
  if (!root.IsMap()) throw std::invalid_argument(path + ":1: the top level must be a mapping");
  refuse_duplicate_keys(path, root);
  return root;
}

void apply_overrides(YAML::Node& root, const std::vector<std::string>& overrides) {
  for (const std::string& pair : overrides) {
    const size_t eq = pair.find('=');
    if (eq == std::string::npos || eq == 0 || pair[0] == '.' || pair[eq - 1] == '.') {
      throw std::invalid_argument("--set expects section.key=value, got '" + pair + "'");
    }
    YAML::Node value;
    try {
      value = unmarked(YAML::Load(pair.substr(eq + 1)));
    } catch (const YAML::Exception& e) {
      throw std::invalid_argument("--set " + pair + ": invalid YAML: " + e.msg);
    }
    // Walk (and make) the mappings down to the key's; yaml-cpp's operator[] on a copy refers to the same node.
    YAML::Node node = root;
    std::string path = pair.substr(0, eq);
    for (size_t dot = path.find('.'); dot != std::string::npos; dot = path.find('.')) {
      const std::string name = path.substr(0, dot);
      if (!node[name].IsMap()) node[name] = YAML::Node(YAML::NodeType::Map);
      node.reset(node[name]);
      path = path.substr(dot + 1);
    }
    node[path] = value;
  }
}

ConfigSection::ConfigSection(std::string file, YAML::Node node, std::string path, const KeyRenames* renames)
    : file_(std::move(file)), node_(std::move(node)), path_(std::move(path)), renames_(renames) {
  if (node_.IsDefined() && !node_.IsNull() && !node_.IsMap()) {
    throw std::invalid_argument(where(file_, node_) + ": " + (path_.empty() ? "top level" : path_) + ": must be a mapping");
  }
}

YAML::Node ConfigSection::take(const std::string& key) {
  read_.insert(key);
  if (!node_.IsDefined() || !node_.IsMap()) return YAML::Node(YAML::NodeType::Undefined);
  const YAML::Node value = node_[key];
  if (!value.IsDefined() || value.IsNull()) return YAML::Node(YAML::NodeType::Undefined);
  return value;
}

void ConfigSection::read_string_list(const std::string& key, std::vector<std::string>& out) {
  const YAML::Node value = take(key);
  if (!value) return;
  try {
    if (value.IsSequence()) {
      out = value.as<std::vector<std::string>>();
      if (out.empty()) fail(key, "must not be an empty list");
    } else {
      out = {value.as<std::string>()};
    }
  } catch (const YAML::Exception&) {
    fail(key, "must be a string or a list of strings");
  }
}

void ConfigSection::read_json(const std::string& key, nlohmann::json& out) {
  const YAML::Node value = take(key);
  if (!value) return;
  if (!value.IsMap()) fail(key, "must be a mapping");
  const std::function<nlohmann::json(const YAML::Node&)> to_json = [&](const YAML::Node& node) -> nlohmann::json {
    if (node.IsMap()) {
      nlohmann::json object = nlohmann::json::object();
      for (const auto& entry : node) object[entry.first.Scalar()] = to_json(entry.second);
      return object;
    }
    if (node.IsSequence()) {
      nlohmann::json array = nlohmann::json::array();
      for (const auto& item : node) array.push_back(to_json(item));
      return array;
    }
    if (node.IsNull()) return nullptr;
    const auto parsed = nlohmann::json::parse(node.Scalar(), nullptr, false);
    return parsed.is_discarded() ? nlohmann::json(node.Scalar()) : parsed;
  };
  out = to_json(value);
  // JSON text is UTF-8, and the mapping travels as JSON (resolved configs, env options).
  try {
    (void)out.dump();
  } catch (const nlohmann::json::type_error&) {
    fail(key, "must be UTF-8 text");
  }
}

ConfigSection ConfigSection::section(const std::string& key) {
  const YAML::Node value = take(key);
  if (value && !value.IsMap()) fail(key, "must be a mapping");
  // `key:` alone stays (null): the mapping is written, every key at its default.
  const YAML::Node& node = node_;
  return ConfigSection(file_, value || !has(key) ? value : node[key], key_path(key), renames_);
}

std::vector<ConfigSection> ConfigSection::section_list(const std::string& key) {
  const YAML::Node value = take(key);
  std::vector<ConfigSection> out;
  if (!value) return out;
  if (!value.IsSequence()) fail(key, "must be a list");
  for (size_t i = 0; i < value.size(); ++i) {
    const std::string path = key_path(key) + "[" + std::to_string(i) + "]";
    if (!value[i].IsMap()) throw std::invalid_argument(where(file_, value[i]) + ": " + path + ": must be a mapping");
    out.emplace_back(file_, value[i], path, renames_);
  }
  return out;
}

void ConfigSection::finish() const {
  if (!node_.IsDefined() || !node_.IsMap()) return;
  for (const auto& entry : node_) {
    const std::string key = entry.first.Scalar();
    if (read_.count(key)) continue;
    const std::string at = where(file_, entry.first) + ": ";
    const std::string path = key_path(key);
    const auto renamed = renames_ ? renames_->find(without_indices(path)) : KeyRenames::const_iterator();
    if (renames_ && renamed != renames_->end()) {
      // The new name at the old one's index: models[2].sight -> models[2].expert_sight.
      std::string new_path = renamed->second;
      if (const size_t open = path.find('['), slot = new_path.find("[]"); open != std::string::npos && slot != std::string::npos) {
        new_path.replace(slot, 2, path.substr(open, path.find(']', open) - open + 1));
      }
      throw std::invalid_argument(at + "key '" + path + "' was renamed to '" + new_path + "'");
    }
    throw std::invalid_argument(at + path + ": unknown key");
  }
}

void ConfigSection::fail(const std::string& key, const std::string& problem) const {
  YAML::Node at = node_;
  if (node_.IsDefined() && node_.IsMap() && node_[key].IsDefined()) at = node_[key];
  const std::string location = at.IsDefined() ? where(file_, at) : file_ + ":1";
  throw std::invalid_argument(location + ": " + key_path(key) + ": " + problem);
}

std::string with_note(std::string rule, const std::string& note) { return note.empty() ? rule : rule + " (" + note + ")"; }

Check<double> unit_interval() {
  return {[](const double& v) { return v >= 0 && v <= 1; }, "must be in [0, 1]"};
}

Check<double> half_open_unit_interval() {
  return {[](const double& v) { return v >= 0 && v < 1; }, "must be in [0, 1)"};
}

std::string list_names(const std::vector<std::string>& names) {
  std::string out;
  for (size_t i = 0; i < names.size(); ++i) out += (i == 0 ? "" : i + 1 == names.size() ? " or " : ", ") + names[i];
  return out;
}

}  // namespace turnrl::trainer
