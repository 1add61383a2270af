#include "trainer/config/config_reader.h"

#include <algorithm>
#include <stdexcept>

namespace turnrl::trainer {
namespace {

std::string line_of(const YAML::Node& node) { return std::to_string(node.Mark().line + 1); }

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

ConfigSection::ConfigSection(std::string file, YAML::Node node, std::string path)
    : file_(std::move(file)), node_(std::move(node)), path_(std::move(path)) {
  if (node_.IsDefined() && !node_.IsNull() && !node_.IsMap()) {
    throw std::invalid_argument(file_ + ":" + line_of(node_) + ": " + (path_.empty() ? "top level" : path_) +
                                ": must be a mapping");
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
  return ConfigSection(file_, value, key_path(key));
}

std::vector<ConfigSection> ConfigSection::section_list(const std::string& key) {
  const YAML::Node value = take(key);
  std::vector<ConfigSection> out;
  if (!value) return out;
  if (!value.IsSequence()) fail(key, "must be a list");
  for (size_t i = 0; i < value.size(); ++i) {
    const std::string path = key_path(key) + "[" + std::to_string(i) + "]";
    if (!value[i].IsMap()) throw std::invalid_argument(file_ + ":" + line_of(value[i]) + ": " + path + ": must be a mapping");
    out.emplace_back(file_, value[i], path);
  }
  return out;
}

void ConfigSection::finish() const {
  if (!node_.IsDefined() || !node_.IsMap()) return;
  for (const auto& entry : node_) {
    const std::string key = entry.first.Scalar();
    if (!read_.count(key)) {
      throw std::invalid_argument(file_ + ":" + line_of(entry.first) + ": " + key_path(key) + ": unknown key");
    }
  }
}

void ConfigSection::fail(const std::string& key, const std::string& problem) const {
  YAML::Node at = node_;
  if (node_.IsDefined() && node_.IsMap() && node_[key].IsDefined()) at = node_[key];
  const std::string line = at.IsDefined() ? line_of(at) : "1";
  throw std::invalid_argument(file_ + ":" + line + ": " + key_path(key) + ": " + problem);
}

std::function<bool(const double&)> unit_interval() {
  return [](const double& v) { return v >= 0 && v <= 1; };
}

std::function<bool(const double&)> half_open_unit_interval() {
  return [](const double& v) { return v >= 0 && v < 1; };
}

std::function<bool(const std::string&)> one_of(const std::vector<std::string>& names) {
  return [names](const std::string& v) { return std::find(names.begin(), names.end(), v) != names.end(); };
}

std::string list_names(const std::vector<std::string>& names) {
  std::string out;
  for (size_t i = 0; i < names.size(); ++i) out += (i == 0 ? "" : i + 1 == names.size() ? " or " : ", ") + names[i];
  return out;
}

}  // namespace turnrl::trainer
