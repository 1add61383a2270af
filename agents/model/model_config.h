#pragma once
// The fields of a Hugging Face Qwen2 `config.json` the model needs, validated.
#include <string>

#include <nlohmann/json_fwd.hpp>

namespace turnrl::agents {

struct ModelConfig {
  int vocab_size = 0;
  int hidden_size = 0;
  int intermediate_size = 0;
  int num_hidden_layers = 0;
  int num_attention_heads = 0;
  int num_key_value_heads = 0;
  int max_position_embeddings = 2048;
  double rope_theta = 10000.0;
  double rms_norm_eps = 1e-6;
  bool tie_word_embeddings = false;
  /** The standard deviation of a new model's weights (HF's field; its 0.02 suits widths of several
   *  hundred, and leaves a 64-wide model's attention near uniform for thousands of steps). */
  double initializer_range = 0.02;
  std::string torch_dtype = "float32";

  int head_dim() const { return hidden_size / num_attention_heads; }
  /** Throws std::runtime_error naming `path` and the field. */
  static ModelConfig load(const std::string& path);
  nlohmann::json to_json() const;
};

}  // namespace turnrl::agents
