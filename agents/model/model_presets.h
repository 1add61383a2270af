#pragma once
// Model shapes that `turnrl new-model` writes with random weights (agents/model/new_model.h), so
// everything runs without downloaded checkpoints. Torch-free: configs check preset names here.
#include <string>
#include <vector>

#include "agents/model/model_config.h"

namespace turnrl::agents {

/** A named model shape. `word_level`: new models get the tiny word-level tokenizer, whose words the
 *  shape's vocab_size counts; the others need a tokenizer to copy. */
struct ModelPreset {
  std::string name;
  ModelConfig (*config)();
  bool word_level;
};

/** "tiny" (a ~150k-parameter Qwen2 with a word-level vocabulary of BALROG's text, trainable on 2 CPU cores),
 *  "tiny-deep" (the same with four layers instead of two), "tiny-wide" (the same twice as wide) and
 *  "qwen2.5-0.5b" (the Qwen2.5-0.5B shape, for benchmarks). */
const std::vector<std::string>& preset_names();
/** Throws std::invalid_argument listing the presets for an unknown name. */
const ModelPreset& find_preset(const std::string& name);
ModelConfig preset_config(const std::string& name);

/** The tiny preset's WordLevel tokenizer.json: chat specials and every env family's vocabulary. */
std::string tiny_tokenizer_json();

}  // namespace turnrl::agents
