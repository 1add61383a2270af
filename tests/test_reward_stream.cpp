// The streaming reward stage: samples sent to the reward workers as they finish (turns at once,
// episodes at their final turn), the rest at the end of the collection, scores back by row; and the
// external HTTP scorer client against a loopback stub (request format, both score forms, retries,
// timeouts, the concurrency limit, clear errors).
#include <doctest/doctest.h>

#include <chrono>
#include <future>
#include <mutex>

#include "tools/serve/stub_http_server.h"
#include "trainer/rewards/http_scorer.h"
#include "trainer/rewards/reward_stage.h"
#include "trainer/rewards/reward_stream.h"
#include "trainer/rewards/reward_manager.h"

using namespace turnrl;
using trainer::ScoringSample;
using trainer::TurnRecord;

namespace {

TurnRecord record(uint64_t episode, int turn_index, size_t tokens, bool done, double reward = 0.0) {
  TurnRecord turn;
  turn.episode_id = episode;
  turn.turn_index = turn_index;
  turn.response_ids.assign(tokens, 7);
  turn.terminated = done;
  turn.reward = reward;
  turn.reply = "reply " + std::to_string(episode) + "/" + std::to_string(turn_index);
  return turn;
}

/** Rows: 0 = episode 7 turn 0, 1 = episode 8 turn 0, 2 = episode 7 turn 1 (ends), 3 = episode 8 turn 1 (cut). */
trainer::RolloutBatch two_slot_batch() {
  trainer::RolloutBatch batch;
  batch.n_env = 2;
  batch.e_len = 2;
  batch.turns = {record(7, 0, 2, false), record(8, 0, 3, false), record(7, 1, 1, true), record(8, 1, 2, false)};
  return batch;
}

/** Scores each turn's tokens with 10 * row + token index, records the samples, and reports each call. */
class RecordingScorer final : public trainer::SampleScorer {
 public:
  std::vector<trainer::SampleScores> score(const std::vector<const ScoringSample*>& samples) override {
    std::vector<trainer::SampleScores> out;
    const std::lock_guard<std::mutex> lock(mutex_);
    for (const ScoringSample* sample : samples) {
      if (fail_) throw std::runtime_error("scorer down");
      rows_.push_back(sample->rows);
      out.emplace_back();
      for (size_t t = 0; t < sample->turns.size(); ++t) {
        out.back().emplace_back();
        for (size_t k = 0; k < sample->turns[t].response_ids.size(); ++k) out.back().back().push_back(10.0f * sample->rows[t] + k);
      }
      if (sent_.size() > rows_.size() - 1) sent_[rows_.size() - 1].set_value();
    }
    return out;
  }
  /** Ready once the `n`-th sample (from 0) was scored. */
  std::future<void> scored(size_t n) {
    const std::lock_guard<std::mutex> lock(mutex_);
    while (sent_.size() <= n) sent_.emplace_back();
    return sent_[n].get_future();
  }
  std::vector<std::vector<size_t>> rows() {
    const std::lock_guard<std::mutex> lock(mutex_);
    return rows_;
  }
  void fail(bool on) {
    const std::lock_guard<std::mutex> lock(mutex_);
    fail_ = on;
  }

 private:
  std::mutex mutex_;
  std::vector<std::vector<size_t>> rows_;
  std::vector<std::promise<void>> sent_;
  bool fail_ = false;
};

bool ready(std::future<void>& future) { return future.wait_for(std::chrono::seconds(10)) == std::future_status::ready; }

const std::vector<std::vector<float>> kExpectedScores = {{0, 1}, {10, 11, 12}, {20}, {30, 31}};

}  // namespace

TEST_CASE("streaming by turn: each observed turn is scored before the collection ends") {
  auto scorer = std::make_shared<RecordingScorer>();
  trainer::ScoringStream stream(scorer, {trainer::SampleUnit::kTurn, 2, 1});
  const trainer::RolloutBatch batch = two_slot_batch();
  std::future<void> first = scorer->scored(0);
  stream.observe(0, batch.turns[0]);
  REQUIRE(ready(first));  // scored while the rest of the collection is still to come
  CHECK(scorer->rows() == std::vector<std::vector<size_t>>{{0}});
  stream.observe(1, batch.turns[1]);
  CHECK(stream.finish(batch) == kExpectedScores);  // rows 2 and 3 were never observed: sent by finish
  CHECK(scorer->rows().size() == 4);
}

TEST_CASE("streaming by episode: an episode goes at its final turn, a cut one with its turns at the end") {
  auto scorer = std::make_shared<RecordingScorer>();
  trainer::ScoringStream stream(scorer, {trainer::SampleUnit::kEpisode, 1, 1});
  trainer::RolloutBatch batch = two_slot_batch();
  std::future<void> first = scorer->scored(0);
  for (size_t row = 0; row < 4; ++row) stream.observe(row, batch.turns[row]);
  REQUIRE(ready(first));
  CHECK(scorer->rows() == std::vector<std::vector<size_t>>{{0, 2}});  // episode 7 ended at row 2; episode 8 still open
  CHECK(stream.finish(batch) == kExpectedScores);
  CHECK(scorer->rows() == std::vector<std::vector<size_t>>{{0, 2}, {1, 3}});
}

TEST_CASE("synchronous scoring: without observed turns, finish sends the same samples") {
  auto scorer = std::make_shared<RecordingScorer>();
  trainer::ScoringStream stream(scorer, {trainer::SampleUnit::kEpisode, 3, 4});
  const trainer::RolloutBatch batch = two_slot_batch();
  CHECK(stream.finish(batch) == kExpectedScores);
  auto rows = scorer->rows();
  std::sort(rows.begin(), rows.end());
  CHECK(rows == std::vector<std::vector<size_t>>{{0, 2}, {1, 3}});
  // The stream starts afresh for the next collection.
  CHECK(stream.finish(batch) == kExpectedScores);
  CHECK(scorer->rows().size() == 4);
}

TEST_CASE("a scorer failure fails the collection's finish, not the next one") {
  auto scorer = std::make_shared<RecordingScorer>();
  trainer::ScoringStream stream(scorer, {trainer::SampleUnit::kTurn, 2, 1});
  const trainer::RolloutBatch batch = two_slot_batch();
  scorer->fail(true);
  stream.observe(0, batch.turns[0]);
  CHECK_THROWS_WITH_AS(stream.finish(batch), "scorer down", std::runtime_error);
  scorer->fail(false);
  CHECK(stream.finish(batch) == kExpectedScores);
  CHECK_THROWS_AS(trainer::ScoringStream(scorer, {trainer::SampleUnit::kTurn, 0, 1}), std::invalid_argument);
}

TEST_CASE("scores a scorer returns in the wrong shape are refused") {
  class ShortScorer final : public trainer::SampleScorer {
    std::vector<trainer::SampleScores> score(const std::vector<const ScoringSample*>& samples) override {
      return std::vector<trainer::SampleScores>(samples.size(), trainer::SampleScores{{1.0f}});
    }
  };
  trainer::ScoringStream stream(std::make_shared<ShortScorer>(), {trainer::SampleUnit::kTurn, 1, 1});
  CHECK_THROWS_WITH_AS(stream.finish(two_slot_batch()), doctest::Contains("token scores for a turn of"), std::runtime_error);
}

TEST_CASE("the reward stage hands a scorer's rows to the manager as rm_scores") {
  auto scorer = std::make_shared<RecordingScorer>();
  trainer::RewardStreams streams;
  streams.scorer = std::make_unique<trainer::ScoringStream>(scorer, trainer::ScoringStreamOptions{trainer::SampleUnit::kEpisode, 1, 1});
  const trainer::RolloutBatch batch = two_slot_batch();
  auto observer = streams.observer();
  REQUIRE(observer);
  for (size_t row = 0; row < 4; ++row) observer(row, batch.turns[row]);
  auto manager = turnrl::trainer::rewards::make_reward_manager("episode", false);
  const trainer::StageRewards rewards = trainer::assign_token_rewards(*manager, batch, &streams);
  CHECK(rewards.manager == kExpectedScores);
  CHECK(rewards.process.empty());
  streams.streaming = false;
  CHECK_FALSE(streams.observer());
}

// --- the HTTP scorer client ---------------------------------------------------------------

namespace {

trainer::HttpScorerConfig scorer_config(const std::string& url) {
  trainer::HttpScorerConfig config;
  config.url = url;
  config.retry = {0.5, 2, 0.01};
  return config;
}

ScoringSample episode_sample() {
  ScoringSample sample;
  sample.rows = {4, 9};
  sample.turns = {record(3, 0, 2, false, 0.5), record(3, 1, 3, true, 1.0)};
  sample.turns[0].reference_answer = "42";
  sample.turns[0].prompt_ids = {1, 2};
  return sample;
}

}  // namespace

TEST_CASE("http scorer: the request names the sample's turns; a number goes on the last token, a list is per token") {
  nlohmann::json seen;
  serve::StubHttpServer server([&](int, const std::string& target, const nlohmann::json& request) {
    CHECK(target == "/score");
    seen = request;
    return serve::StubReply{200, {{"scores", {0.25, {0.5, 0.0, -1.0}}}}, 0};
  });
  trainer::HttpScorer scorer(scorer_config(server.url("/score")));
  const ScoringSample sample = episode_sample();
  const auto scores = scorer.score({&sample});
  REQUIRE(scores.size() == 1);
  CHECK(scores[0] == trainer::SampleScores{{0.0f, 0.25f}, {0.5f, 0.0f, -1.0f}});
  CHECK(seen["episode_id"] == 3);
  REQUIRE(seen["turns"].size() == 2);
  CHECK(seen["turns"][0]["reply"] == "reply 3/0");
  CHECK(seen["turns"][0]["env_reward"] == 0.5);
  CHECK(seen["turns"][0]["reference_answer"] == "42");
  CHECK(seen["turns"][0]["prompt_ids"] == nlohmann::json{1, 2});
  CHECK(seen["turns"][1]["terminated"] == true);
  CHECK(seen["turns"][1]["response_ids"].size() == 3);
}

TEST_CASE("http scorer: retries after a 503 and after a timeout") {
  serve::StubHttpServer server([](int index, const std::string&, const nlohmann::json&) {
    if (index == 0) return serve::StubReply{503, {}, 0};
    if (index == 1) return serve::StubReply{200, {{"scores", {1, 2}}}, 1500};  // past the 0.5 s timeout
    return serve::StubReply{200, {{"scores", {3, 4}}}, 0};
  });
  trainer::HttpScorer scorer(scorer_config(server.url("/score")));
  const ScoringSample sample = episode_sample();
  CHECK(scorer.score({&sample})[0] == trainer::SampleScores{{0.0f, 3.0f}, {0.0f, 0.0f, 4.0f}});
  CHECK(server.requests() == 3);
}

TEST_CASE("http scorer: a reply that does not fit, a 400 and an unreachable scorer fail with the URL") {
  serve::StubHttpServer server([](int index, const std::string&, const nlohmann::json&) {
    if (index == 0) return serve::StubReply{200, {{"scores", {1}}}, 0};  // one score for two turns
    if (index == 1) return serve::StubReply{200, {{"scores", {1, {1, 2}}}}, 0};  // two scores for three tokens
    return serve::StubReply{400, {{"error", "bad sample"}}, 0};
  });
  trainer::HttpScorer scorer(scorer_config(server.url("/score")));
  const ScoringSample sample = episode_sample();
  CHECK_THROWS_WITH_AS(scorer.score({&sample}), doctest::Contains("one entry per turn (2)"), std::runtime_error);
  CHECK_THROWS_WITH_AS(scorer.score({&sample}), doctest::Contains("a list of 3 numbers"), std::runtime_error);
  CHECK_THROWS_WITH_AS(scorer.score({&sample}), doctest::Contains("HTTP 400"), std::runtime_error);
  CHECK(server.requests() == 3);  // none of these is retried
  unsigned short port;
  {
    serve::StubHttpServer closed([](int, const std::string&, const nlohmann::json&) { return serve::StubReply{}; });
    port = closed.port();
  }
  trainer::HttpScorer unreachable(scorer_config("http://127.0.0.1:" + std::to_string(port) + "/score"));
  CHECK_THROWS_WITH_AS(unreachable.score({&sample}), doctest::Contains("cannot reach http://127.0.0.1:"), std::runtime_error);
  CHECK_THROWS_AS(trainer::HttpScorer(scorer_config("https://example.com/score")), std::invalid_argument);
}

TEST_CASE("http scorer through a stream: samples in flight at once up to the concurrency") {
  serve::StubHttpServer server([](int, const std::string&, const nlohmann::json& request) {
    nlohmann::json scores = nlohmann::json::array();
    for (const auto& turn : request["turns"]) scores.push_back(turn["env_reward"]);
    return serve::StubReply{200, {{"scores", scores}}, 100};
  });
  trainer::HttpScorerConfig config = scorer_config(server.url("/score"));
  config.concurrency = 3;
  trainer::ScoringStream stream(std::make_shared<trainer::HttpScorer>(config), {trainer::SampleUnit::kTurn, config.concurrency, 1});
  trainer::RolloutBatch batch;
  batch.n_env = 7;
  batch.e_len = 1;
  for (int i = 0; i < 7; ++i) batch.turns.push_back(record(i, 0, 2, true, 0.5 * i));
  for (size_t row = 0; row < 7; ++row) stream.observe(row, batch.turns[row]);
  const auto scores = stream.finish(batch);
  for (size_t row = 0; row < 7; ++row) CHECK(scores[row] == std::vector<float>{0.0f, 0.5f * row});
  CHECK(server.max_in_flight() == 3);
}
