#pragma once
#include <string_view>

#include "envs/babaisai/levels.h"
#include "envs/registry.h"

namespace turnrl::envs::babaisai {

/** Ids `babaisai/<level>` for BALROG's 40 levels, option `max_steps` (default 100), and the
 *  replayer of the golden files whose env ids are `env/<level>`. */
EnvFamily babaisai_family();

/** The prefix of the family's ids ("babaisai/<level>"). */
inline constexpr std::string_view kIdPrefix = "babaisai/";
/** BALROG's level `name`, or null. */
const LevelId* find_level(std::string_view name);

}  // namespace turnrl::envs::babaisai
