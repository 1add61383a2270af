#include "agents/model/model_config.h"

#include <fstream>
#include <stdexcept>

#include <nlohmann/json.hpp>

namespace turnrl::agents {

ModelConfig ModelConfig::load(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error(path + ": cannot open");
  nlohmann::json json;
  try {
    json = nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {  // parse_error, or out_of_range for 1e999
    throw std::runtime_error(path + ": invalid JSON: " + e.what());
  }
  if (!json.is_object()) throw std::runtime_error(path + ": must be a JSON object");
  ModelConfig config;
  auto get_int = [&](const char* key, int& out, bool required) {
    if (!json.contains(key) || json[key].is_null()) {
      if (required) throw std::runtime_error(path + ": missing field '" + std::string(key) + "'");
      return;
    }
    if (!json[key].is_number_integer() || json[key].get<int64_t>() <= 0) {
      throw std::runtime_error(path + ": field '" + std::string(key) + "' must be a positive integer");
    }
    out = json[key].get<int>();
  };
  get_int("vocab_size", config.vocab_size, true);
  get_int("hidden_size", config.hidden_size, true);
  get_int("intermediate_size", config.intermediate_size, true);
  get_int("num_hidden_layers", config.num_hidden_layers, true);
  get_int("num_attention_heads", config.num_attention_heads, true);
  config.num_key_value_heads = config.num_attention_heads;
  get_int("num_key_value_heads", config.num_key_value_heads, false);
  get_int("max_position_embeddings", config.max_position_embeddings, false);
  if (json.contains("rope_theta")) config.rope_theta = json["rope_theta"].get<double>();
  if (json.contains("rms_norm_eps")) config.rms_norm_eps = json["rms_norm_eps"].get<double>();
  config.tie_word_embeddings = json.value("tie_word_embeddings", false);
  if (json.contains("initializer_range")) {
    if (!json["initializer_range"].is_number() || !(json["initializer_range"].get<double>() > 0)) {
      throw std::runtime_error(path + ": field 'initializer_range' must be a positive number");
    }
    config.initializer_range = json["initializer_range"].get<double>();
  }
  config.torch_dtype = json.value("torch_dtype", "float32");
  if (config.hidden_size % config.num_attention_heads != 0 ||
      config.num_attention_heads % config.num_key_value_heads != 0) {
    throw std::runtime_error(path + ": hidden_size, num_attention_heads and num_key_value_heads are inconsistent");
  }
  if (json.value("model_type", "qwen2") != "qwen2") {
    throw std::runtime_error(path + ": model_type '" + json.value("model_type", "") + "' is not supported (qwen2)");
  }
  return config;
}

nlohmann::json ModelConfig::to_json() const {
  return {{"architectures", {"Qwen2ForCausalLM"}},
          {"model_type", "qwen2"},
          {"vocab_size", vocab_size},
          {"hidden_size", hidden_size},
          {"intermediate_size", intermediate_size},
          {"num_hidden_layers", num_hidden_layers},
          {"num_attention_heads", num_attention_heads},
          {"num_key_value_heads", num_key_value_heads},
          {"max_position_embeddings", max_position_embeddings},
          {"rope_theta", rope_theta},
          {"rms_norm_eps", rms_norm_eps},
          {"tie_word_embeddings", tie_word_embeddings},
          {"initializer_range", initializer_range},
          {"hidden_act", "silu"},
          {"use_sliding_window", false},
          {"sliding_window", nullptr},
          {"attention_dropout", 0.0},
          {"torch_dtype", torch_dtype}};
}

}  // namespace turnrl::agents
