#pragma once
#include "envs/registry.h"

namespace turnrl::envs::arith {

/** Ids `arith/single` and `arith/multi`; options `steps` (operations per problem, default 3, 1..8)
 *  and `max_value` (largest result and answer, default 999, 2..9999). No golden replayer. The
 *  vocabulary lists the numbers 0..99 only: with the tiny preset's word-level tokenizer, keep
 *  max_value <= 99 (a larger action is refused as outside the vocabulary when decoding is constrained). */
EnvFamily arith_family();

}  // namespace turnrl::envs::arith
