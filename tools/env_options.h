#pragma once
// `--env-option key=value` pairs into the JSON object the env registry takes.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace turnrl::tools {

/** Values parse as JSON when they can (numbers, booleans, lists), otherwise as strings. */
nlohmann::json parse_env_options(const std::vector<std::string>& pairs);

}  // namespace turnrl::tools
