#pragma once
// Turn-level PPO with a separate critic, critic warm-up, KL-in-reward against a frozen reference
// and dual-discount GAE: the order of operations of Verlog (../shared/spec/verlog.md 5-8). This
// file is the loop; targets, the update and evaluation live in their own files.
#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "trainer/config/train_config.h"

namespace turnrl::trainer {

class ProcessGroup;  // trainer/dist/distributed.h

/** What `PpoTrainer::time_updates` measured. */
struct UpdateTimings {
  size_t turns = 0;                      // of the collection every update ran on
  double prompt_tokens = 0, response_tokens = 0;  // summed over its turns
  std::vector<double> seconds;           // of each update
};

class PpoTrainer {
 public:
  /** Loads (or creates from the preset) the models; `resume` (RUN or RUN/checkpoint) continues a run.
   *  With `ranks`, this process is one rank of a data-parallel run: it collects env.n_env slots of
   *  its own (the run's slots rank * n_env ..), the update treats every rank's collection as one
   *  batch, and rank 0 alone evaluates and writes the run folder (metrics, checkpoints, model). */
  PpoTrainer(TrainConfig config, const std::string& resume, std::shared_ptr<ProcessGroup> ranks = nullptr);
  ~PpoTrainer();
  /** Runs to the configured iterations or minutes, or until `*stop_requested` (the iteration in
   *  flight finishes first); then always saves a checkpoint and the final model (RUN/model). */
  void train(const std::atomic<bool>* stop_requested = nullptr);

  /** `turnrl bench update`: collects once, then runs `updates` PPO updates on that collection (the
   *  weights move, the work per update does not), timing each as the loop's `seconds.update`. */
  UpdateTimings time_updates(int updates);

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace turnrl::trainer
