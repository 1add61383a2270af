#pragma once
// A new model of a preset's shape (agents/model/model_presets.h) with random weights.
#include <cstdint>
#include <optional>
#include <string>

namespace turnrl::agents {

/**
 * Writes a Hugging Face folder: config.json, model.safetensors (N(0, initializer_range) init from
 * `seed`; the preset's range, 0.02, unless `initializer_range` is given), generation_config.json,
 * and the tokenizer (the tiny word-level one, or copied from `tokenizer_dir` when given).
 */
void write_new_model(const std::string& preset, const std::string& dir, uint64_t seed, const std::string& tokenizer_dir,
                     std::optional<double> initializer_range = std::nullopt);

}  // namespace turnrl::agents
