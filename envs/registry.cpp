#include "envs/registry.h"

#include <algorithm>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "envs/arith/arith_family.h"
#include "envs/corridor/corridor_family.h"
#include "envs/babaisai/babaisai_family.h"
#include "envs/babyai/babyai_family.h"
#include "envs/crafter/crafter_family.h"

namespace turnrl::envs {

const std::vector<EnvFamily>& env_families() {
  static const std::vector<EnvFamily> families = [] {
    std::vector<EnvFamily> all;
    all.push_back(babyai::babyai_family());
    all.push_back(babaisai::babaisai_family());
    all.push_back(crafter::crafter_family());
    all.push_back(arith::arith_family());
    all.push_back(corridor::corridor_family());
    return all;
  }();
  return families;
}

std::vector<int> read_int_options(const std::string& id, const nlohmann::json& options, const std::vector<IntOption>& allowed) {
  std::vector<int> values;
  std::string names;
  for (const auto& option : allowed) {
    values.push_back(option.default_value);
    names += (names.empty() ? "" : ", ") + option.name;
  }
  for (const auto& item : options.items()) {
    // Not a structured binding: clang 14 cannot capture one in a lambda (the fuzz build uses clang).
    const std::string& key = item.key();
    const nlohmann::json& value = item.value();
    const auto found = std::find_if(allowed.begin(), allowed.end(), [&](const IntOption& o) { return o.name == key; });
    if (found == allowed.end()) throw std::invalid_argument("env " + id + ": unknown option '" + key + "' (valid: " + names + ")");
    if (!value.is_number_integer() || value.get<int64_t>() < found->min || value.get<int64_t>() > found->max) {
      throw std::invalid_argument("env " + id + ": option " + key + " must be an integer in [" + std::to_string(found->min) +
                                  ", " + std::to_string(found->max) + "]");
    }
    values[found - allowed.begin()] = value.get<int>();
  }
  return values;
}

std::vector<OptionSpec> describe(const std::vector<IntOption>& options) {
  std::vector<OptionSpec> out;
  for (const IntOption& option : options) {
    out.push_back({option.name, std::to_string(option.default_value), option.description + " (integer in [" +
                                                                          std::to_string(option.min) + ", " + std::to_string(option.max) + "])"});
  }
  return out;
}

std::vector<std::string> env_ids() {
  std::vector<std::string> ids;
  for (const auto& family : env_families()) ids.insert(ids.end(), family.ids.begin(), family.ids.end());
  return ids;
}

const EnvFamily& family_of(const std::string& id) {
  for (const auto& family : env_families()) {
    if (std::find(family.ids.begin(), family.ids.end(), id) != family.ids.end()) return family;
  }
  std::string message = "unknown env id '" + id + "'; valid ids:";
  for (const auto& known : env_ids()) message += "\n  " + known;
  throw std::invalid_argument(message);
}

std::unique_ptr<Env> make_env(const std::string& id, const nlohmann::json& options) {
  if (!options.is_null() && !options.is_object()) {
    throw std::invalid_argument("env options for " + id + " must be a mapping");
  }
  return family_of(id).make(id, options.is_null() ? nlohmann::json::object() : options);
}

std::unique_ptr<Env> make_env(const std::string& id) { return make_env(id, nlohmann::json::object()); }

}  // namespace turnrl::envs
