#include "trainer/rewards/reward_stream.h"

#include <algorithm>
#include <chrono>
#include <stdexcept>
#include <string>
#include <utility>

namespace turnrl::trainer {

ScoringStream::ScoringStream(std::shared_ptr<SampleScorer> scorer, ScoringStreamOptions options)
    : scorer_(std::move(scorer)), options_(options) {
  if (!scorer_) throw std::invalid_argument("scoring stream: null scorer");
  if (options_.workers < 1 || options_.max_batch < 1) throw std::invalid_argument("scoring stream: workers and max_batch must be >= 1");
  for (int i = 0; i < options_.workers; ++i) workers_.emplace_back([this] { work(); });
}

ScoringStream::~ScoringStream() {
  {
    const std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  work_ready_.notify_all();
  for (std::thread& worker : workers_) worker.join();
}

void ScoringStream::send(ScoringSample sample) {
  queue_.push_back(std::make_shared<const ScoringSample>(std::move(sample)));
  work_ready_.notify_one();
}

void ScoringStream::observe(size_t row, const TurnRecord& turn) {
  const std::lock_guard<std::mutex> lock(mutex_);
  observed_.insert(row);
  if (options_.unit == SampleUnit::kTurn) {
    send({{row}, {turn}});
    return;
  }
  ScoringSample& episode = open_episodes_[turn.episode_id];
  episode.rows.push_back(row);
  episode.turns.push_back(turn);
  if (turn.done()) {
    send(std::move(episode));
    open_episodes_.erase(turn.episode_id);
  }
}

void ScoringStream::work() {
  std::unique_lock<std::mutex> lock(mutex_);
  while (true) {
    work_ready_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
    if (stopping_) return;
    std::vector<std::shared_ptr<const ScoringSample>> taken;
    while (!queue_.empty() && taken.size() < options_.max_batch) {
      taken.push_back(std::move(queue_.front()));
      queue_.pop_front();
    }
    in_scoring_ += taken.size();
    lock.unlock();
    std::vector<const ScoringSample*> samples;
    for (const auto& sample : taken) samples.push_back(sample.get());
    std::vector<SampleScores> scores;
    std::exception_ptr failure;
    const auto start = std::chrono::steady_clock::now();
    try {
      scores = scorer_->score(samples);
      if (scores.size() != samples.size()) {
        throw std::runtime_error("a scorer returned " + std::to_string(scores.size()) + " results for " +
                                 std::to_string(samples.size()) + " samples");
      }
      for (size_t s = 0; s < samples.size(); ++s) {
        if (scores[s].size() != samples[s]->turns.size()) {
          throw std::runtime_error("a scorer returned " + std::to_string(scores[s].size()) + " rows for a sample of " +
                                   std::to_string(samples[s]->turns.size()) + " turns");
        }
        for (size_t t = 0; t < scores[s].size(); ++t) {
          if (scores[s][t].size() != samples[s]->turns[t].response_ids.size()) {
            throw std::runtime_error("a scorer returned " + std::to_string(scores[s][t].size()) + " token scores for a turn of " +
                                     std::to_string(samples[s]->turns[t].response_ids.size()) + " response tokens");
          }
        }
      }
    } catch (...) {
      failure = std::current_exception();
    }
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    lock.lock();
    scoring_seconds_ += seconds;
    if (failure) {
      if (!failure_) failure_ = failure;
    } else {
      for (size_t s = 0; s < samples.size(); ++s) {
        for (size_t t = 0; t < samples[s]->rows.size(); ++t) scores_[samples[s]->rows[t]] = std::move(scores[s][t]);
      }
    }
    in_scoring_ -= taken.size();
    if (queue_.empty() && in_scoring_ == 0) all_done_.notify_all();
  }
}

std::vector<std::vector<float>> ScoringStream::finish(const RolloutBatch& batch) {
  std::unique_lock<std::mutex> lock(mutex_);
  // Rows in increasing order are each episode's turns in time order (time-major rows).
  for (size_t row = 0; row < batch.turns.size(); ++row) {
    if (observed_.count(row)) continue;
    const TurnRecord& turn = batch.turns[row];
    if (options_.unit == SampleUnit::kTurn) {
      send({{row}, {turn}});
    } else {
      ScoringSample& episode = open_episodes_[turn.episode_id];
      episode.rows.push_back(row);
      episode.turns.push_back(turn);
    }
  }
  for (auto& [id, episode] : open_episodes_) {
    for (size_t t = 0; t < episode.rows.size(); ++t) episode.turns[t] = batch.turns[episode.rows[t]];  // final records
    send(std::move(episode));
  }
  open_episodes_.clear();
  all_done_.wait(lock, [&] { return queue_.empty() && in_scoring_ == 0; });
  std::exception_ptr failure = std::exchange(failure_, nullptr);
  std::map<size_t, std::vector<float>> scores = std::move(scores_);
  scores_.clear();
  observed_.clear();
  last_scoring_seconds_ = std::exchange(scoring_seconds_, 0.0);
  lock.unlock();
  if (failure) std::rethrow_exception(failure);
  std::vector<std::vector<float>> rows(batch.turns.size());
  for (size_t row = 0; row < rows.size(); ++row) {
    auto found = scores.find(row);
    if (found == scores.end()) throw std::logic_error("scoring stream: row " + std::to_string(row) + " was never scored");
    rows[row] = std::move(found->second);
  }
  return rows;
}

std::function<void(size_t, const TurnRecord&)> observe_all(std::vector<ScoringStream*> streams) {
  streams.erase(std::remove(streams.begin(), streams.end(), nullptr), streams.end());
  if (streams.empty()) return {};
  return [streams](size_t row, const TurnRecord& turn) {
    for (ScoringStream* stream : streams) stream->observe(row, turn);
  };
}

}  // namespace turnrl::trainer
