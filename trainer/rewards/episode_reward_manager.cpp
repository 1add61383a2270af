#include "trainer/rewards/episode_reward_manager.h"

#include <set>
#include <stdexcept>

#include <nlohmann/json.hpp>

namespace turnrl::trainer::rewards {

TurnTokenRewards EpisodeRewardManager::assign(const std::vector<CollectedTurn>& turns) {
  TurnTokenRewards out;
  out.reserve(turns.size());
  std::map<uint64_t, OpenEpisode> open = open_;  // committed only when the whole collection is valid
  std::set<uint64_t> ended;
  for (const CollectedTurn& turn : turns) {
    if (ended.count(turn.episode_id)) {
      throw std::logic_error("episode " + std::to_string(turn.episode_id) + " has a turn after its final turn");
    }
    OpenEpisode& episode = open[turn.episode_id];
    episode.reward_sum += turn.env_reward;
    ++episode.turns;
    std::optional<std::vector<float>> scores = attached_scores(turn);
    out.push_back(scores ? std::move(*scores) : std::vector<float>(turn.response_tokens, 0.0f));
    if (!turn.episode_ended) continue;
    if (!scores) {
      if (turn.response_tokens == 0) {
        throw std::invalid_argument("episode " + std::to_string(turn.episode_id) + ": the final turn has no response token");
      }
      out.back().back() = static_cast<float>(normalize_by_length_ ? episode.reward_sum / episode.turns : episode.reward_sum);
    }
    open.erase(turn.episode_id);
    ended.insert(turn.episode_id);
  }
  open_ = std::move(open);
  return out;
}

nlohmann::json EpisodeRewardManager::state() const {
  nlohmann::json episodes = nlohmann::json::array();
  for (const auto& [id, episode] : open_) {
    episodes.push_back({{"episode_id", id}, {"reward_sum", episode.reward_sum}, {"turns", episode.turns}});
  }
  return {{"open_episodes", episodes}};
}

void EpisodeRewardManager::load_state(const nlohmann::json& state) {
  std::map<uint64_t, OpenEpisode> open;
  try {
    for (const auto& episode : state.at("open_episodes")) {
      open[episode.at("episode_id").get<uint64_t>()] = {episode.at("reward_sum").get<double>(), episode.at("turns").get<int>()};
    }
  } catch (const nlohmann::json::exception& e) {
    throw std::invalid_argument(std::string("episode reward manager: malformed state: ") + e.what());
  }
  open_ = std::move(open);
}

}  // namespace turnrl::trainer::rewards
