#pragma once
#include "envs/registry.h"

namespace turnrl::envs::corridor {

/** Ids `corridor/short` and `corridor/long`, option `length`; no golden files (it ports nothing). */
EnvFamily corridor_family();

}  // namespace turnrl::envs::corridor
