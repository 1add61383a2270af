#pragma once
// An external reward scorer over HTTP, as the streaming reward stage's workers call it: one POST of
// JSON per sample (a turn, or an episode's turns of the collection), several in flight at once up to
// the stream's workers, each with its timeout and retries (agents/http_post.h). The scores come back
// as the turns' rm_scores, which the reward managers use as they are.
//
// Request: {"episode_id", "episode_seed", "turns": [{"turn_index", "reply", "action", "valid_action",
//   "env_reward", "terminated", "truncated", "reference_answer", "prompt_ids", "response_ids"}, ...]}
// Reply:   {"scores": [one entry per turn]}, an entry being a number (the turn's score, placed on its
//   last response token) or a list of one number per response token.
#include <string>

#include <nlohmann/json_fwd.hpp>

#include "agents/http_post.h"
#include "trainer/rewards/reward_stream.h"

namespace turnrl::trainer {

struct HttpScorerConfig {
  std::string url;  // http://host:port/path
  int concurrency = 8;  // requests in flight at once: the stream's workers
  agents::HttpRetryPolicy retry{10.0, 3, 0.5};
};

class HttpScorer final : public SampleScorer {
 public:
  /** std::invalid_argument for a malformed URL or policy. */
  explicit HttpScorer(const HttpScorerConfig& config);
  /** One request per sample, in turn; std::runtime_error naming the URL when a request fails or the
   *  reply does not fit the sample. */
  std::vector<SampleScores> score(const std::vector<const ScoringSample*>& samples) override;

  /** The request body for `sample`. */
  static nlohmann::json request_json(const ScoringSample& sample);
  /** The token scores in `reply` for `sample`; std::runtime_error when they do not fit. */
  static SampleScores scores_from_json(const nlohmann::json& reply, const ScoringSample& sample);

 private:
  agents::HttpUrl url_;
  agents::HttpRetryPolicy retry_;
};

}  // namespace turnrl::trainer
