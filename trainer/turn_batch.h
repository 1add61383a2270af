#pragma once
// What one fixed-turn collection yields: n_env x e_len turn records, slot-major in time order,
// plus the prompt each unfinished episode continues from (for its bootstrap value).
#include <cstdint>
#include <string>
#include <vector>

namespace turnrl::trainer {

struct Turn {
  int slot = 0;            // env slot
  int64_t episode = 0;     // global episode id
  int index = 0;           // turn index within the episode
  std::vector<int32_t> prompt_ids;
  std::vector<int32_t> response_ids;
  std::vector<float> sample_logprobs;  // per response token, under the sampling policy
  std::string reply;                   // decoded response
  double reward = 0.0;                 // env reward (after penalty/binarisation), placed on the last response token
  bool terminated = false;
  bool truncated = false;
  bool invalid = false;                // the reply named no action; the default ran
  int action_token_start = 0;          // first action token (Actor::action_token_start), for the KL split

  bool done() const { return terminated || truncated; }
};

struct TurnBatch {
  int n_env = 0;
  int e_len = 0;
  std::vector<Turn> turns;  // turns[t * n_env + slot]
  /** Per slot: the prompt after the last turn when its episode goes on (empty when it ended). */
  std::vector<std::vector<int32_t>> bootstrap_prompts;

  const Turn& at(int t, int slot) const { return turns[static_cast<size_t>(t) * n_env + slot]; }
};

}  // namespace turnrl::trainer
