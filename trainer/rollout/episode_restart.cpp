#include "trainer/rollout/episode_restart.h"

#include <spdlog/spdlog.h>

namespace turnrl::trainer {

nlohmann::json restarts_json(const std::vector<EpisodeRestart>& restarts) {
  nlohmann::json out = nlohmann::json::array();
  for (const EpisodeRestart& r : restarts) {
    out.push_back({{"slot", r.slot},
                   {"worker", r.worker},
                   {"reason", r.reason},
                   {"lost_episode_id", r.lost_episode_id},
                   {"lost_seed", r.lost_seed},
                   {"lost_turns", r.lost_turns},
                   {"episode_id", r.episode_id},
                   {"seed", r.seed}});
  }
  return out;
}

std::string describe(const EpisodeRestart& r) {
  return "slot " + std::to_string(r.slot) + ": env lost on " + r.worker + " (" + r.reason + "); episode " +
         std::to_string(r.lost_episode_id) + " (seed " + std::to_string(r.lost_seed) + ") abandoned after " +
         std::to_string(r.lost_turns) + " turns, episode " + std::to_string(r.episode_id) + " (seed " + std::to_string(r.seed) +
         ") begun instead";
}

void log_restarts(const std::vector<EpisodeRestart>& restarts) {
  for (const EpisodeRestart& restart : restarts) spdlog::warn("{}", describe(restart));
}

}  // namespace turnrl::trainer
