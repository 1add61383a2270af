#include "trainer/rewards/http_scorer.h"

#include <algorithm>
#include <stdexcept>

#include <nlohmann/json.hpp>

namespace turnrl::trainer {

HttpScorer::HttpScorer(const HttpScorerConfig& config) : url_(agents::HttpUrl::parse(config.url, "http scorer")), retry_(config.retry) {
  retry_.validate("http scorer");
}

nlohmann::json HttpScorer::request_json(const ScoringSample& sample) {
  nlohmann::json turns = nlohmann::json::array();
  for (const TurnRecord& turn : sample.turns) {
    turns.push_back({{"turn_index", turn.turn_index},
                     {"reply", turn.reply},
                     {"action", turn.action},
                     {"valid_action", turn.valid_action},
                     {"env_reward", turn.reward},
                     {"terminated", turn.terminated},
                     {"truncated", turn.truncated},
                     {"reference_answer", turn.reference_answer},
                     {"prompt_ids", turn.prompt_ids},
                     {"response_ids", turn.response_ids}});
  }
  const TurnRecord& first = sample.turns.at(0);
  return {{"episode_id", first.episode_id}, {"episode_seed", first.episode_seed}, {"turns", std::move(turns)}};
}

SampleScores HttpScorer::scores_from_json(const nlohmann::json& reply, const ScoringSample& sample) {
  if (!reply.is_object() || !reply.contains("scores") || !reply["scores"].is_array() ||
      reply["scores"].size() != sample.turns.size()) {
    throw std::runtime_error("the reply must be {\"scores\": [...]} with one entry per turn (" + std::to_string(sample.turns.size()) +
                             "), got " + reply.dump().substr(0, 200));
  }
  SampleScores scores;
  for (size_t t = 0; t < sample.turns.size(); ++t) {
    const nlohmann::json& entry = reply["scores"][t];
    const size_t length = sample.turns[t].response_ids.size();
    if (entry.is_number()) {
      if (length == 0) throw std::runtime_error("turn " + std::to_string(t) + " has no response token to put its score on");
      scores.emplace_back(length, 0.0f);
      scores.back().back() = entry.get<float>();
    } else if (entry.is_array() && entry.size() == length &&
               std::all_of(entry.begin(), entry.end(), [](const nlohmann::json& x) { return x.is_number(); })) {
      scores.push_back(entry.get<std::vector<float>>());
    } else {
      throw std::runtime_error("scores[" + std::to_string(t) + "] must be a number or a list of " + std::to_string(length) +
                               " numbers (one per response token)");
    }
  }
  return scores;
}

std::vector<SampleScores> HttpScorer::score(const std::vector<const ScoringSample*>& samples) {
  std::vector<SampleScores> out;
  for (const ScoringSample* sample : samples) {
    const std::string body = agents::http_post_json(url_, request_json(*sample).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace),
                                                    retry_, "http scorer");
    const auto reply = nlohmann::json::parse(body, nullptr, false);
    try {
      out.push_back(scores_from_json(reply, *sample));
    } catch (const std::runtime_error& error) {
      throw std::runtime_error("http scorer: " + url_.text + ": " + error.what());
    }
  }
  return out;
}

}  // namespace turnrl::trainer
