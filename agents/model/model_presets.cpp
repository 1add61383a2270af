#include "agents/model/model_presets.h"

#include <set>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "envs/registry.h"

namespace turnrl::agents {
namespace {

// The tiny preset's word-level vocabulary (pre-tokenised as \w+ | [^\w\s]+): the chat specials, then
// the words the env families list for their texts.
constexpr const char* kTinySpecials[] = {"<|endoftext|>", "<|im_start|>", "<|im_end|>", "<unk>"};

/** The tiny preset's words: every registered family's vocabulary, in registry order, once each;
 *  then each action name of several words joined by '_' (as `Move_West`), so that a reply of one
 *  token can name any action (trainer/rollout/policy_agent.cpp). The decoder reads them back with
 *  spaces. */
std::vector<std::string> tiny_words() {
  std::vector<std::string> words;
  std::set<std::string> seen;
  for (const envs::EnvFamily& family : envs::env_families()) {
    for (const std::string& word : family.vocabulary) {
      if (seen.insert(word).second) words.push_back(word);
    }
  }
  for (const envs::EnvFamily& family : envs::env_families()) {
    for (const envs::ActionSpec& action : family.actions) {
      const std::string joined = action.joined_name();
      if (joined != action.name && seen.insert(joined).second) words.push_back(joined);
    }
  }
  return words;
}

ModelConfig tiny_config() {
  ModelConfig config;
  config.vocab_size = static_cast<int>(std::size(kTinySpecials) + tiny_words().size());
  config.hidden_size = 64;
  config.intermediate_size = 256;
  config.num_hidden_layers = 2;
  config.num_attention_heads = 4;
  config.num_key_value_heads = 2;
  config.max_position_embeddings = 1024;
  config.rope_theta = 10000.0;
  // Untied: action names share words with observations ("go left" / "the exit is 2 steps to the
  // left"). With one matrix for both, a format stage that trains "left" and "right" as reply tokens
  // makes their input rows nearly parallel, and the model can no longer learn to tell such
  // observations apart (test_learning's format-stage case).
  config.tie_word_embeddings = false;
  return config;
}

/** The tiny preset with four layers instead of two: reading which listed object the instruction
 *  means, then where it lies, is a two-step lookup, and eight distractors make the list long. */
ModelConfig tiny_deep_config() {
  ModelConfig config = tiny_config();
  config.num_hidden_layers = 4;
  return config;
}

/** The tiny preset twice as wide (hidden 128, MLP 512): about 420k parameters. */
ModelConfig tiny_wide_config() {
  ModelConfig config = tiny_config();
  config.hidden_size = 128;
  config.intermediate_size = 512;
  return config;
}

ModelConfig qwen25_half_billion() {
  ModelConfig config;
  config.vocab_size = 151936;
  config.hidden_size = 896;
  config.intermediate_size = 4864;
  config.num_hidden_layers = 24;
  config.num_attention_heads = 14;
  config.num_key_value_heads = 2;
  config.max_position_embeddings = 32768;
  config.rope_theta = 1000000.0;
  config.tie_word_embeddings = true;
  config.torch_dtype = "bfloat16";  // as Qwen's own config.json: bf16 autocast on CUDA (float32 weights)
  return config;
}

const std::vector<ModelPreset>& presets() {
  static const std::vector<ModelPreset> table = {{"tiny", tiny_config, true},
                                            {"tiny-deep", tiny_deep_config, true},
                                            {"tiny-wide", tiny_wide_config, true},
                                            {"qwen2.5-0.5b", qwen25_half_billion, false}};
  return table;
}

}  // namespace

const ModelPreset& find_preset(const std::string& name) {
  for (const ModelPreset& preset : presets()) {
    if (preset.name == name) return preset;
  }
  std::string known;
  for (const std::string& known_name : preset_names()) known += (known.empty() ? "" : ", ") + known_name;
  throw std::invalid_argument("unknown model preset '" + name + "' (" + known + ")");
}

const std::vector<std::string>& preset_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> out;
    for (const ModelPreset& preset : presets()) out.push_back(preset.name);
    return out;
  }();
  return names;
}

ModelConfig preset_config(const std::string& name) { return find_preset(name).config(); }

std::string tiny_tokenizer_json() {
  nlohmann::ordered_json vocab = nlohmann::ordered_json::object();
  nlohmann::json added = nlohmann::json::array();
  int32_t id = 0;
  for (const char* special : kTinySpecials) {
    vocab[special] = id;
    added.push_back({{"id", id}, {"content", special}, {"single_word", false}, {"lstrip", false},
                     {"rstrip", false}, {"normalized", false}, {"special", true}});
    ++id;
  }
  for (const std::string& word : tiny_words()) vocab[word] = id++;
  nlohmann::ordered_json root;
  root["version"] = "1.0";
  root["added_tokens"] = added;
  root["normalizer"] = nullptr;
  root["pre_tokenizer"] = {{"type", "Whitespace"}};
  root["model"] = {{"type", "WordLevel"}, {"vocab", vocab}, {"unk_token", "<unk>"}};
  root["decoder"] = {{"type", "Replace"}, {"pattern", {{"String", "_"}}}, {"content", " "}};
  return root.dump(1);
}

}  // namespace turnrl::agents
