#include "tools/serve/api_error.h"

#include <nlohmann/json.hpp>

namespace turnrl::serve {

nlohmann::json error_body(unsigned status, const std::string& message) {
  const char* type = status == 404 ? "not_found_error" : status < 500 ? "invalid_request_error" : "server_error";
  return {{"error", {{"message", message}, {"type", type}, {"param", nullptr}, {"code", nullptr}}}};
}

}  // namespace turnrl::serve
