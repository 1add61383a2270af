#pragma once
// What one fixed-turn collection hands to the learner: n_env x e_len turn records in time-major
// order (row t * n_env + i = turn t of slot i, as in Verlog), plus the bootstrap prompts.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "memory/chat_message.h"
#include "trainer/rollout/episode_restart.h"

namespace turnrl::trainer {

struct TurnRecord {
  int slot = 0;
  uint64_t episode_id = 0;  // unique within a Rollout: slot + n_env * (episodes the slot began before)
  int turn_index = 0;       // 0-based turn within its episode
  uint64_t episode_seed = 0;
  std::vector<int32_t> prompt_ids, response_ids;  // empty for text-only agents
  std::vector<float> logprobs;                    // sampling log-probs, one per response id
  std::string reply;
  int action = 0;
  bool valid_action = false;
  bool response_truncated = false;  // the reply hit the generation length limit
  /** First response token of the action (after the reply parser's action marker): tokens before
   *  it are reasoning. Equals response_ids.size() when no token holds action text. */
  int action_token_start = 0;
  /** Env::state_hash() of the state the action was chosen in (when the rollout records them). */
  std::string state_hash;
  /** Env::reference_answer() when the reply was asked for (empty where the env knows none). */
  std::string reference_answer;
  /** Env reward of the step (or the invalid-action penalty), scaled by 1/episode length for
   *  finished episodes when normalisation is on. It belongs on the last response token. */
  double reward = 0.0;
  bool terminated = false;  // no bootstrap
  bool truncated = false;   // time limit (the next state's value may bootstrap), its env was lost, or agent_error
  /** Why the agent gave no reply (then the env's default action was played and the episode ended). */
  std::string agent_error;
  bool done() const { return terminated || truncated; }
};

/** The next prompt of an episode still running at the cut; its value bootstraps the last turn. */
struct BootstrapPrompt {
  uint64_t episode_id = 0;
  std::vector<memory::ChatMessage> messages;
  std::vector<int32_t> prompt_ids;  // empty for text-only agents
};

struct EpisodeSummary {
  int slot = 0;
  uint64_t episode_id = 0, seed = 0;
  int length = 0;
  double episode_return = 0.0;
  double progression = 0.0;
  bool terminated = false, truncated = false;
};

struct RolloutBatch {
  int n_env = 0, e_len = 0;
  std::vector<TurnRecord> turns;                         // n_env * e_len, time-major
  std::vector<std::optional<BootstrapPrompt>> bootstrap;  // per slot; set iff its episode is unfinished
  std::vector<EpisodeSummary> finished_episodes;          // episodes that ended in this collection
  std::vector<EpisodeRestart> restarts;                   // episodes abandoned because their env was lost
  double seconds = 0.0;
  double agent_seconds = 0.0;  // wall time with at least one agent request outstanding
  double env_seconds = 0.0;     // applying replies (parse, step, reset at episode ends) on the rollout's thread
  double prompt_seconds = 0.0;  // building prompts (memory window, token budget) on the rollout's thread
  size_t agent_batches = 0;    // act() calls (none when every request went through Agent::submit)
  const TurnRecord& at(int t, int slot) const { return turns.at(static_cast<size_t>(t) * n_env + slot); }
};

}  // namespace turnrl::trainer
