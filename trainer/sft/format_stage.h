#pragma once
// The models a run starts from: model.path (created from model.preset when it holds no model) and,
// when the config declares a format stage, the model that stage fine-tunes from it. Both are made
// once and reused by later runs; a stage that is interrupted leaves nothing a later run would reuse.
#include "agents/model/tokenizer.h"
#include "trainer/sft/sft_data.h"
#include "trainer/config/train_config.h"

namespace turnrl::trainer {

class ProcessGroup;  // trainer/dist/distributed.h

/** The format data of a training config: its tasks, env options and turn settings, the stage's
 *  template and episode count, seeds at the top of the run's training block (never evaluation
 *  seeds), prompts cut to the token budget with the model in `model_dir`'s tokenizer and context. */
SftDataSpec format_data_spec(const TrainConfig& config, const std::string& model_dir, const agents::Tokenizer& tokenizer);

/** Makes whatever of model.path and format.model is missing; returns config.initial_model().
 *
 *  Data-parallel (`ranks`, a collective): rank 0 makes the preset's model and decides whether the
 *  stage runs; every rank then plays its share of each round's episodes (its own data file beside
 *  rank 0's: `sft_data.jsonl`, `sft_data.rank1.jsonl`, ...) and takes part in every fine-tuning
 *  (trainer/sft/sft.h), so the stage needs its folder shared by the ranks (one machine, or a shared
 *  file system); rank 0 alone moves and removes files. */
std::string prepare_initial_model(const TrainConfig& config, ProcessGroup* ranks = nullptr);

}  // namespace turnrl::trainer
