#pragma once
#include <string>

#include <nlohmann/json_fwd.hpp>

#include "envs/crafter/world.h"
#include "envs/registry.h"

namespace turnrl::envs::crafter {

/** Ids `crafter` (plain, no rendering cost) and `crafter/balrog` (BALROG's mode); options
 *  area, view, size, length (JSON); replayers for "crafter-golden-v1" and "crafter-balrog-text-v1". */
EnvFamily crafter_family();

inline constexpr const char* kPlainId = "crafter";
inline constexpr const char* kBalrogId = "crafter/balrog";
/** A [width, height] option of at least `min_value` each (std::invalid_argument naming env `id` and `key`). */
Pos read_pair(const std::string& id, const std::string& key, const nlohmann::json& value, int min_value);

}  // namespace turnrl::envs::crafter
