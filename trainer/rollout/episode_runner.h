#pragma once
// Runs a list of whole episodes (evaluation), several at once, through the same slots and
// batch scheduler as training rollouts, recording the text of every turn.
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
};

struct EpisodeLog {
  EpisodeJob job;
  std::vector<TurnLog> turns;
  double episode_return = 0.0, progression = 0.0;
  std::vector<std::string> achievements;  // unlocked by the episode's end (envs that have them)
  bool terminated = false, truncated = false;
};

struct EpisodeRunnerConfig {
  int parallel_episodes = 4;
  size_t batch_size = 0;  // 0: as many as are waiting
  bool pipelined = true;
  TurnSettings turn;
};

/** The seed of an evaluation episode's reply-translation choices (EnvSlot), shared with play. */
inline uint64_t episode_choice_seed(uint64_t episode_seed) { return episode_seed ^ 0xA5A5A5A5ULL; }
/** The per-request sampling seed of turn `turn` of an evaluation episode, shared with play. */
inline uint64_t episode_turn_seed(uint64_t episode_seed, int turn) { return episode_seed * 1000003ULL + static_cast<uint64_t>(turn); }

/** Runs `jobs`; `on_finished` is called (on the caller's thread) as each episode ends. */
void run_episodes(const std::vector<EpisodeJob>& jobs,
                  const std::function<std::unique_ptr<envs::Env>(const std::string& env_id)>& make_env,
                  agents::Agent& agent, const EpisodeRunnerConfig& config,
                  const std::function<void(EpisodeLog&&)>& on_finished);

}  // namespace turnrl::trainer
