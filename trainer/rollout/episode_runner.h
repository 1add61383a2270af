#pragma once
// Runs a list of whole episodes (evaluation), up to parallel_episodes at once, one fiber per
// running episode, through the same env slots and reply dispatch as training rollouts, recording
// the text of every turn. A turn whose request fails plays the default action and ends its
// episode (TurnLog::error).
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "agents/agent.h"
#include "trainer/rollout/env_slot.h"

namespace turnrl::trainer {

struct EpisodeJob {
  std::string env_id;
  uint64_t seed = 0;
  size_t key = 0;  // the caller's index for this episode
};

struct TurnLog {
  std::vector<memory::ChatMessage> prompt;
  std::string reply;
  std::string action;  // executed action name
  bool valid = false;
  double reward = 0.0;
  std::string error;  // why the agent gave no reply (then `reply` is empty)
  size_t prompt_tokens = 0, completion_tokens = 0;  // the reply's (agents::AgentReply)
};

struct EpisodeLog {
  EpisodeJob job;
  std::vector<TurnLog> turns;
  double episode_return = 0.0, progression = 0.0;
  std::vector<std::string> achievements;  // unlocked by the episode's end (envs that have them)
  bool terminated = false, truncated = false;
};

struct EpisodeRunnerConfig {
  int parallel_episodes = 4;  // episodes running at once
  /** Prompts per act() call for agents without asynchronous submit; 0: as many as are waiting. */
  size_t batch_size = 0;
  bool lock_step = false;     // every turn waits for every running episode's reply
  TurnSettings turn;
  double progress_s = 0.0;    // seconds between progress lines (0: none)
  std::string progress_label = "episodes";
};

/** The seed of an evaluation episode's reply-translation choices (EnvSlot), shared with play. */
inline uint64_t episode_choice_seed(uint64_t episode_seed) { return episode_seed ^ 0xA5A5A5A5ULL; }
/** The per-request sampling seed of turn `turn` of an evaluation episode, shared with play. */
inline uint64_t episode_turn_seed(uint64_t episode_seed, int turn) { return episode_seed * 1000003ULL + static_cast<uint64_t>(turn); }

/** Runs `jobs`; `on_finished` is called (on the caller's thread) as each episode ends. Throws the
 *  first error of an env or of `on_finished` once the running episodes have stopped. */
void run_episodes(const std::vector<EpisodeJob>& jobs,
                  const std::function<std::unique_ptr<envs::Env>(const std::string& env_id)>& make_env,
                  agents::Agent& agent, const EpisodeRunnerConfig& config,
                  const std::function<void(EpisodeLog&&)>& on_finished);

}  // namespace turnrl::trainer
