#pragma once
// Model shapes that `turnrl new-model` writes with random weights, so everything runs without
// downloaded checkpoints.
#include <cstdint>
#include <string>
#include <vector>

#include "agents/model/model_config.h"

namespace turnrl::agents {

/** "tiny" (a ~150k-parameter Qwen2 with a word-level vocabulary of BALROG's text, trainable on 2 CPU cores),
 *  "tiny-deep" (the same with four layers instead of two), "tiny-wide" (the same twice as wide) and
 *  "qwen2.5-0.5b" (the Qwen2.5-0.5B shape, for benchmarks). */
const std::vector<std::string>& preset_names();
/** Throws std::invalid_argument listing the presets for an unknown name. */
ModelConfig preset_config(const std::string& name);

/** The tiny preset's WordLevel tokenizer.json: chat specials and every env family's vocabulary. */
std::string tiny_tokenizer_json();

/**
 * Writes a Hugging Face folder: config.json, model.safetensors (N(0, 0.02) init from `seed`),
 * generation_config.json, and the tokenizer (the tiny word-level one, or copied from
 * `tokenizer_dir` when given).
 */
void write_new_model(const std::string& preset, const std::string& dir, uint64_t seed, const std::string& tokenizer_dir);

}  // namespace turnrl::agents
