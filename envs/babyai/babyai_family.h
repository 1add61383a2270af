#pragma once
#include "envs/registry.h"

namespace turnrl::envs::babyai {

/** Ids `babyai/<task>`, option `num_dists` (default 0), and the golden-file replayer. */
EnvFamily babyai_family();

}  // namespace turnrl::envs::babyai
