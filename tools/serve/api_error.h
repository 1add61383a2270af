#pragma once
// The OpenAI API's error reply: an HTTP status and an error object naming what was wrong.
#include <stdexcept>
#include <string>

#include <nlohmann/json_fwd.hpp>

namespace turnrl::serve {

/** A request the API refuses: the reply's status and its error message. */
struct ApiError : std::runtime_error {
  ApiError(unsigned status, const std::string& message) : std::runtime_error(message), status(status) {}
  unsigned status;
};

/** {"error": {"message", "type", "param", "code"}}, the type following from the status. */
nlohmann::json error_body(unsigned status, const std::string& message);

}  // namespace turnrl::serve
