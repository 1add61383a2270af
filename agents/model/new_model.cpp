#include "agents/model/new_model.h"

#include <filesystem>
#include <fstream>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "agents/model/model_presets.h"
#include "agents/model/qwen2_model.h"
#include "agents/model/tokenizer.h"

namespace turnrl::agents {
namespace {

void write_text(const std::string& path, const std::string& text) {
  std::ofstream out(path);
  out << text;
  if (!out.flush()) throw std::runtime_error(path + ": write failed");
}

}  // namespace

void write_new_model(const std::string& preset, const std::string& dir, uint64_t seed, const std::string& tokenizer_dir,
                     std::optional<double> initializer_range) {
  const ModelPreset& shape = find_preset(preset);
  ModelConfig config = shape.config();
  if (initializer_range) {
    if (!(*initializer_range > 0)) throw std::invalid_argument("initializer range must be > 0");
    config.initializer_range = *initializer_range;
  }
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
