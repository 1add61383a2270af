#pragma once
#include "envs/registry.h"

namespace turnrl::envs::babaisai {

/** Ids `babaisai/<level>` for BALROG's 40 levels, option `max_steps` (default 100), and the
 *  replayer of the golden files whose env ids are `env/<level>`. */
EnvFamily babaisai_family();

}  // namespace turnrl::envs::babaisai
