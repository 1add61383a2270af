#pragma once
// Checkpoints: actor/ and critic/ (complete Hugging Face folders), both optimisers, the rollout's
// state, the RNG and step counters, the resolved config. Written through a folder swap
// (trainer/run/run_folder.h), so a complete checkpoint exists at every instant.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "trainer/algo/learner_state.h"
#include "trainer/run/learning_curve.h"

namespace turnrl::trainer {

/** What each rank of a run resumes on its own. */
struct RankState {
  nlohmann::json rollout;         // Rollout::state(): episodes begun and in flight
  nlohmann::json reward_manager;  // RewardManager::state(): episodes the window cut, with their partial sums
};

struct CheckpointState {
  int iteration = 0;
  double elapsed_seconds = 0.0;  // PPO's wall clock so far
  double setup_seconds = 0.0;    // the first command's time before PPO (format stage, loading)
  /** One per rank of the run that saved it: state.json's `rollout` and `reward_manager` for one
   *  process, its `ranks` list for a data-parallel run. */
  std::vector<RankState> ranks;
  std::vector<EvalPoint> curve;  // evaluations so far
};

/** `tokenizer_dir`: the model folder whose tokenizer files the saved models carry. */
void save_checkpoint(const std::string& dir, LearnerState& learner, const CheckpointState& state, const std::string& config_yaml,
                     const std::string& tokenizer_dir);

/** Restores the optimisers and the shuffle stream; returns the rest. Models load from dir/actor and dir/critic. */
CheckpointState load_checkpoint(const std::string& dir, LearnerState& learner);

/** The evaluated actor of highest progression so far (`run.keep_best`), recorded in its folder's best.json. */
struct BestModel {
  int iteration = -1;  // -1: none yet
  double progression = 0.0;
};

/** Writes the actor as a Hugging Face folder at `dir` (swapped in whole), with `best` in dir/best.json when given. */
void save_model(const std::string& dir, LearnerState& learner, const std::string& tokenizer_dir, const BestModel* best = nullptr);
/** The record of the complete best model at `dir` (or its `.old` after an interrupted swap); none if neither. */
BestModel read_best_model(const std::string& dir);
/** Copies the model folder `from` to `to`, swapped in whole. */
void copy_model(const std::string& from, const std::string& to);

}  // namespace turnrl::trainer
