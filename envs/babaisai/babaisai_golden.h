#pragma once
// Golden replay of BabaIsAI recordings (../shared/spec/babyai_baba.md C.3), whose env ids are
// `env/<level>`: every recorded field recomputed by the port.
#include <memory>

#include <nlohmann/json_fwd.hpp>

#include "envs/golden.h"

namespace turnrl::envs::babaisai {

/** A replayer when `first_record` is a BabaIsAI golden file's first line, else null. */
std::unique_ptr<GoldenReplayer> make_golden_replayer(const nlohmann::json& first_record);

}  // namespace turnrl::envs::babaisai
