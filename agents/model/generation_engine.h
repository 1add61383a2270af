#pragma once
// The continuous-batching engine on a thread of its own: any thread submits requests, which join
// the running batch at its next decoding step; replies come back through the request's callbacks.
// Torch-free header.
#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "agents/model/continuous_batcher.h"

namespace turnrl::agents {

class GenerationEngine {
 public:
  /** Decodes with `model` until destroyed; at most `max_batch` sequences at once. While the engine
   *  runs, nothing else may run the model (its compute threads are the engine's). */
  explicit GenerationEngine(std::shared_ptr<LanguageModel> model, int max_batch = 64, uint64_t prefix_cache_bytes = 0);
  /** Stops after the current step; unfinished requests end with an error. */
  ~GenerationEngine();
  GenerationEngine(const GenerationEngine&) = delete;
  GenerationEngine& operator=(const GenerationEngine&) = delete;

  /** Thread-safe. Throws std::invalid_argument for a bad request (ContinuousBatcher::check). The
   *  callbacks run on the engine's thread: keep them short (hand the result over). */
  void submit(GenerationRequest request);
  LanguageModel& model() { return *model_; }
  /** Thread-safe: the batcher's figures as of its last step. */
  BatcherStats stats();

 private:
  void run();

  std::shared_ptr<LanguageModel> model_;
  ContinuousBatcher batcher_;  // touched by the engine's thread only (check() is const)
  std::mutex mutex_;
  std::condition_variable wake_;
  std::vector<GenerationRequest> inbox_;
  BatcherStats stats_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace turnrl::agents
