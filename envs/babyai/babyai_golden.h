#pragma once
// Golden replay of BabyAI recordings (../shared/spec/babyai_baba.md C.3): every recorded field
// recomputed by the port, for `turnrl replay`, the tests and the env server's golden scripts.
#include <memory>

#include <nlohmann/json_fwd.hpp>

#include "envs/golden.h"

namespace turnrl::envs::babyai {

/** A replayer when `first_record` is a BabyAI golden file's first line, else null. */
std::unique_ptr<GoldenReplayer> make_golden_replayer(const nlohmann::json& first_record);

}  // namespace turnrl::envs::babyai
