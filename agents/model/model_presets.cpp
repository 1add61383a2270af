#include "agents/model/model_presets.h"

#include <filesystem>
#include <fstream>
#include <set>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "agents/model/qwen2_model.h"
#include "agents/model/tokenizer.h"
#include "envs/registry.h"

namespace turnrl::agents {
namespace {

// The tiny preset's word-level vocabulary (pre-tokenised as \w+ | [^\w\s]+): the chat specials, then
// the words the env families list for their texts.
constexpr const char* kTinySpecials[] = {"<|endoftext|>", "<|im_start|>", "<|im_end|>", "<unk>"};

/** The tiny preset's words: every registered family's vocabulary, in registry order, once each. */
std::vector<std::string> tiny_words() {
  std::vector<std::string> words;
  std::set<std::string> seen;
  for (const envs::EnvFamily& family : envs::env_families()) {
    for (const std::string& word : family.vocabulary) {
      if (seen.insert(word).second) words.push_back(word);
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
  return config;
}

void write_text(const std::string& path, const std::string& text) {
  std::ofstream out(path);
  out << text;
  if (!out.flush()) throw std::runtime_error(path + ": write failed");
}

/** A named model shape. `word_level`: new models get the tiny word-level tokenizer, whose words
 *  the shape's vocab_size counts; the others need a tokenizer to copy. */
struct Preset {
  std::string name;
  ModelConfig (*config)();
  bool word_level;
};

const std::vector<Preset>& presets() {
  static const std::vector<Preset> table = {{"tiny", tiny_config, true},
                                            {"tiny-deep", tiny_deep_config, true},
                                            {"tiny-wide", tiny_wide_config, true},
                                            {"qwen2.5-0.5b", qwen25_half_billion, false}};
  return table;
}

const Preset& find_preset(const std::string& name) {
  for (const Preset& preset : presets()) {
    if (preset.name == name) return preset;
  }
  std::string known;
  for (const std::string& known_name : preset_names()) known += (known.empty() ? "" : ", ") + known_name;
  throw std::invalid_argument("unknown model preset '" + name + "' (" + known + ")");
}

}  // namespace

const std::vector<std::string>& preset_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> out;
    for (const Preset& preset : presets()) out.push_back(preset.name);
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
  return root.dump(1);
}

void write_new_model(const std::string& preset, const std::string& dir, uint64_t seed, const std::string& tokenizer_dir) {
  const Preset& shape = find_preset(preset);
  const ModelConfig config = shape.config();
  std::filesystem::create_directories(dir);
  torch::manual_seed(seed);
  Qwen2Model model(config, false);
  save_qwen2(model, dir);
  if (!tokenizer_dir.empty()) {
    copy_tokenizer_files(tokenizer_dir, dir);
  } else if (shape.word_level) {
    write_text(dir + "/tokenizer.json", tiny_tokenizer_json());
    write_text(dir + "/tokenizer_config.json",
               nlohmann::json{{"eos_token", "<|im_end|>"}, {"pad_token", "<|endoftext|>"}, {"bos_token", nullptr}}.dump(2));
  } else {
    throw std::invalid_argument("preset '" + preset + "' needs --tokenizer DIR to copy a tokenizer from");
  }
  const Tokenizer tokenizer = Tokenizer::load(dir);
  write_text(dir + "/generation_config.json",
             nlohmann::json{{"eos_token_id", tokenizer.stop_ids()}, {"pad_token_id", tokenizer.pad_id()}}.dump(2));
}

}  // namespace turnrl::agents
