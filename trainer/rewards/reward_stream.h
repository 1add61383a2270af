#pragma once
// Streaming (asynchronous) reward (rewards.md section 3, as VeRL-Omni): a sample whose generation has
// finished (one turn, or the turns of one episode) goes at once to a pool of reward workers, which
// score it while the other samples are still being generated; the update still waits for the whole
// scored batch (on-policy: no partial or stale batches). The rollout reports finished turns through
// RolloutConfig::on_turn_finished; observe() is that hook.
//
// Without observe() calls, finish() sends every sample after the collection: synchronous scoring,
// the same samples and scores (turnrl bench reward compares the two).
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <exception>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "trainer/rollout/rollout_buffer.h"

namespace turnrl::trainer {

/** What a scorer scores: one turn, or one episode's turns of the collection, in time order. */
struct ScoringSample {
  std::vector<size_t> rows;       // the turns' rows in the collection
  std::vector<TurnRecord> turns;  // copies of those rows' records
};

/** One row of token scores per turn of a sample (the turn's response length each). */
using SampleScores = std::vector<std::vector<float>>;

/** A way to score samples: an external HTTP scorer, process rewards from the actor, ... */
class SampleScorer {
 public:
  virtual ~SampleScorer() = default;
  /** One SampleScores per sample, for samples that waited together. Runs on the stream's worker
   *  threads (several at once when the stream has several workers); throws on failure. */
  virtual std::vector<SampleScores> score(const std::vector<const ScoringSample*>& samples) = 0;
};

/** Per reward manager: the env manager scores turns, the episode manager episodes. */
enum class SampleUnit { kTurn, kEpisode };

struct ScoringStreamOptions {
  SampleUnit unit = SampleUnit::kTurn;
  int workers = 1;        // threads: the samples in scoring at once at most
  size_t max_batch = 1;   // samples one score() call takes at most (those waiting when a worker came free)
};

/**
 * One scorer's reward workers, reused collection after collection (one at a time). An episode sample
 * holds the episode's turns of this collection only: an episode the collection window cuts is sent
 * by finish() with the turns it has, and its later turns form a sample of the next collection.
 */
class ScoringStream {
 public:
  /** Starts the workers; std::invalid_argument for workers < 1 or max_batch < 1. */
  ScoringStream(std::shared_ptr<SampleScorer> scorer, ScoringStreamOptions options);
  /** Stops the workers after the samples in scoring (queued ones are dropped). */
  ~ScoringStream();
  ScoringStream(const ScoringStream&) = delete;
  ScoringStream& operator=(const ScoringStream&) = delete;

  /** A finished turn (the rollout's thread): a turn sample is sent at once, an episode sample at its final turn. */
  void observe(size_t row, const TurnRecord& turn);
  /**
   * Sends the turns not yet sent (with their final records), waits for every score and returns one
   * row per turn of `batch`; the stream is then ready for the next collection. Rethrows the first
   * scoring failure; std::runtime_error when a scorer returns rows of the wrong shape.
   */
  std::vector<std::vector<float>> finish(const RolloutBatch& batch);

  /** Seconds the workers spent inside score() during the last finished collection (summed over workers). */
  double scoring_seconds() const { return last_scoring_seconds_; }

 private:
  void send(ScoringSample sample);  // with mutex_ held
  void work();

  std::shared_ptr<SampleScorer> scorer_;
  ScoringStreamOptions options_;
  std::mutex mutex_;
  std::condition_variable work_ready_, all_done_;
  std::deque<std::shared_ptr<const ScoringSample>> queue_;
  size_t in_scoring_ = 0;
  bool stopping_ = false;
  std::exception_ptr failure_;
  std::set<size_t> observed_;                        // rows observe() saw this collection
  std::map<uint64_t, ScoringSample> open_episodes_;  // episode unit: turns of episodes not ended yet
  std::map<size_t, std::vector<float>> scores_;      // by row
  double scoring_seconds_ = 0.0, last_scoring_seconds_ = 0.0;
  std::vector<std::thread> workers_;
};

/** The observers of several streams as one RolloutConfig::on_turn_finished (the null ones skipped). */
std::function<void(size_t, const TurnRecord&)> observe_all(std::vector<ScoringStream*> streams);

}  // namespace turnrl::trainer
