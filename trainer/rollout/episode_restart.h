#pragma once
// The record of an episode a rollout abandoned because its env was lost (envs::EnvLost: the env
// worker died or stopped answering), and of the episode the slot began instead. The trainer logs
// them to the console and to metrics.jsonl.
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace turnrl::trainer {

struct EpisodeRestart {
  int slot = 0;
  std::string worker;  // where the env was lost (EnvLost::where)
  std::string reason;
  uint64_t lost_episode_id = 0, lost_seed = 0;
  int lost_turns = 0;  // turns the abandoned episode had played, in this collection and earlier ones
  uint64_t episode_id = 0, seed = 0;  // the episode begun instead
};

nlohmann::json restarts_json(const std::vector<EpisodeRestart>& restarts);
/** One line for the console. */
std::string describe(const EpisodeRestart& restart);
/** Each restart as a warning. */
void log_restarts(const std::vector<EpisodeRestart>& restarts);

}  // namespace turnrl::trainer
