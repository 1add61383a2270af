#pragma once
// The names configs write an enum's values with: one table per enum, specialised beside the enum
// (EnumNames<E>::names(), in the order of E's values 0, 1, ...), read by the key declarations
// (trainer/config/config_schema.h) and by whatever logs or parses a value.
#include <optional>
#include <string>
#include <vector>

#include "envs/expert.h"

namespace turnrl::trainer {

template <typename E>
struct EnumNames;

template <typename E>
const std::string& enum_name(E value) {
  return EnumNames<E>::names().at(static_cast<size_t>(value));
}

template <typename E>
std::optional<E> parse_enum(const std::string& name) {
  const std::vector<std::string>& names = EnumNames<E>::names();
  for (size_t i = 0; i < names.size(); ++i) {
    if (names[i] == name) return static_cast<E>(i);
  }
  return std::nullopt;
}

/** envs/ knows no config: its names are its own. */
template <>
struct EnumNames<envs::ExpertSight> {
  static const std::vector<std::string>& names() { return envs::expert_sight_names(); }
};

}  // namespace turnrl::trainer
