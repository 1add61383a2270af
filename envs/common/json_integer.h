#pragma once
// Integers read from JSON that others wrote (golden records, clients' requests, servers' replies):
// nlohmann's get<int>() casts a float or an out-of-range number, which is undefined behaviour.
#include <limits>
#include <stdexcept>
#include <string>
#include <utility>

#include <nlohmann/json.hpp>

namespace turnrl::envs {

/** `value` as an Int; throws std::out_of_range unless it is an integer that Int holds. */
template <typename Int>
Int json_integer(const nlohmann::json& value) {
  const bool fits = value.is_number_unsigned() ? std::in_range<Int>(value.get<uint64_t>())
                                               : value.is_number_integer() && std::in_range<Int>(value.get<int64_t>());
  if (!fits) {
    throw std::out_of_range("expected an integer in [" + std::to_string(std::numeric_limits<Int>::min()) + ", " +
                            std::to_string(std::numeric_limits<Int>::max()) + "], got " +
                            value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
  }
  return value.get<Int>();
}

}  // namespace turnrl::envs
