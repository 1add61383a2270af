#pragma once
// Turn-level PPO with a separate critic, critic warm-up, KL-in-reward against a frozen reference
// and dual-discount GAE: the order of operations of Verlog (../shared/spec/verlog.md 5-8).
#include <memory>
#include <string>

#include "trainer/train_config.h"

namespace turnrl::trainer {

class PpoTrainer {
 public:
  /** Loads (or creates from the preset) the models; `resume_dir` continues a checkpoint. */
  PpoTrainer(TrainConfig config, const std::string& resume_dir);
  ~PpoTrainer();
  /** Runs to the configured iterations or minutes; writes metrics, curve and checkpoints to run.out. */
  void train();

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace turnrl::trainer
