#pragma once
#include "envs/registry.h"

namespace turnrl::envs::crafter {

/** Ids `crafter` (plain, no rendering cost) and `crafter/balrog` (BALROG's mode); options
 *  area, view, size, length (JSON); replayers for "crafter-golden-v1" and "crafter-balrog-text-v1". */
EnvFamily crafter_family();

}  // namespace turnrl::envs::crafter
