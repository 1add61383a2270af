#pragma once
// Golden replay of Crafter recordings (`crafter-golden-v1`, and BALROG's text layer
// `crafter-balrog-text-v1`): every recorded field recomputed by the port.
#include <memory>

#include <nlohmann/json_fwd.hpp>

#include "envs/golden.h"

namespace turnrl::envs::crafter {

/** A replayer when `first_record` is a Crafter golden file's first line, else null. */
std::unique_ptr<GoldenReplayer> make_golden_replayer(const nlohmann::json& first_record);

}  // namespace turnrl::envs::crafter
