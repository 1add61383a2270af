#include "tools/env_options.h"

#include <stdexcept>

namespace turnrl::tools {

nlohmann::json parse_env_options(const std::vector<std::string>& pairs) {
  nlohmann::json options = nlohmann::json::object();
  for (const auto& pair : pairs) {
    const size_t eq = pair.find('=');
    if (eq == std::string::npos || eq == 0) {
      throw std::invalid_argument("--env-option expects key=value, got '" + pair + "'");
    }
    const std::string value = pair.substr(eq + 1);
    nlohmann::json parsed = nlohmann::json::parse(value, nullptr, /*allow_exceptions=*/false);
    options[pair.substr(0, eq)] = parsed.is_discarded() ? nlohmann::json(value) : parsed;
  }
  return options;
}

}  // namespace turnrl::tools
