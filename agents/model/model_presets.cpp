#include "agents/model/model_presets.h"

#include <filesystem>
#include <fstream>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "agents/model/qwen2_model.h"
#include "agents/model/tokenizer.h"

namespace turnrl::agents {
namespace {

// Word-level vocabulary of the tiny preset: what BALROG's prompts, observations and the chat
// format contain (pre-tokenised as \w+ | [^\w\s]+).
constexpr const char* kTinySpecials[] = {"<|endoftext|>", "<|im_start|>", "<|im_end|>", "<unk>"};
constexpr const char* kTinyWords[] = {
    "!", "'", "(", ")", ",", "-", ".", ":", "<", ">", "?", "0", "1", "2", "3", "4", "5", "6", "7", "8", "9",
    "ACTION", "Action", "action", "agent", "Current", "Defaulted", "Finally", "First", "I", "In", "It", "Observation", "Once",
    "PLAY", "The", "Tips", "You", "Your", "a", "about", "above", "actions", "after", "always", "an", "and", "are",
    "assistant", "at", "ball", "below", "best", "blue", "box", "by", "can", "carry", "change", "closed", "contain",
    "course", "description", "desired", "did", "doesn", "door", "drop", "each", "end", "episode", "first", "followed",
    "following", "form", "forward", "front", "game", "go", "goal", "green", "grey", "have", "holding", "in",
    "interact", "is", "it", "key", "left", "locked", "make", "manipulate", "message", "moment", "navigation", "next",
    "no", "not", "object", "observation", "of", "one", "open", "or", "other", "output", "over", "pick", "playing",
    "possible", "present", "previous", "provide", "purple", "put", "red", "repeat", "right", "s", "same", "see",
    "sense", "short", "simple", "single", "step", "steps", "system", "t", "take", "terminates", "text", "that", "the",
    "then", "think", "time", "to", "toggle", "turn", "until", "up", "use", "user", "valid", "wall", "want", "what",
    "will", "with", "yellow", "you", "turn_left", "turn_right", "go_forward", "pick_up",
    // BabaIsAI and Crafter words, so the tiny preset serves every env's text.
    "\"", "[", "]", "`", "/", "Active", "BABA", "Baba", "Coal", "Collect", "Consider", "Cow", "Crafter", "Defeat", "Diamond", "Do", "Drink", "East", "Eat", "Examine", "Furnace", "IS", "Identify", "If", "Iron", "Is", "Make", "Move", "Multiuse", "Noop", "North", "Objects", "Pickaxe", "Place", "Plant", "Property", "Remember", "STOP", "Sapling", "Skeleton", "Sleep", "Sometimes", "South", "Stone", "Subject", "Sword", "Table", "These", "Think", "Up", "WIN", "Wake", "West", "Wood", "YOU", "Zombie", "achievements", "all", "alter", "apart", "around", "as", "baba", "be", "behaviors", "blocks", "breaking", "but", "carefully", "changed", "changing", "coal", "collect", "completely", "completing", "condition", "counts", "cow", "craft", "create", "creatively", "creature", "current", "defined", "diamond", "different", "do", "down", "drink", "east", "energy", "existing", "face", "far", "flat", "food", "for", "formed", "forming", "from", "furnace", "get", "grass", "ground", "health", "hit", "how", "idle", "immovable", "inventory", "involves", "iron", "lake", "lava", "level", "making", "map", "material", "maximum", "move", "moving", "nearby", "new", "north", "nothing", "noting", "objects", "observations", "on", "ones", "only", "path", "pickaxe", "place", "plant", "properties", "push", "puzzle", "reach", "rule", "rules", "sand", "sapling", "similar", "skeleton", "sleep", "sleeping", "solution", "south", "status", "stone", "stop", "stuck", "sword", "table", "this", "tree", "try", "unexpected", "usually", "wait", "water", "ways", "west", "when", "where", "which", "win", "wood", "your", "yourself", "zombie", "died", "arrow"};

ModelConfig tiny_config() {
  ModelConfig config;
  config.vocab_size = static_cast<int>(std::size(kTinySpecials) + std::size(kTinyWords));
  config.hidden_size = 64;
  config.intermediate_size = 256;
  config.num_hidden_layers = 2;
  config.num_attention_heads = 4;
  config.num_key_value_heads = 2;
  config.max_position_embeddings = 1024;
  config.rope_theta = 10000.0;
  config.tie_word_embeddings = true;
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

}  // namespace

const std::vector<std::string>& preset_names() {
  static const std::vector<std::string> names = {"tiny", "qwen2.5-0.5b"};
  return names;
}

ModelConfig preset_config(const std::string& name) {
  if (name == "tiny") return tiny_config();
  if (name == "qwen2.5-0.5b") return qwen25_half_billion();
  throw std::invalid_argument("unknown model preset '" + name + "' (tiny, qwen2.5-0.5b)");
}

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
  for (const char* word : kTinyWords) vocab[word] = id++;
  nlohmann::ordered_json root;
  root["version"] = "1.0";
  root["added_tokens"] = added;
  root["normalizer"] = nullptr;
  root["pre_tokenizer"] = {{"type", "Whitespace"}};
  root["model"] = {{"type", "WordLevel"}, {"vocab", vocab}, {"unk_token", "<unk>"}};
  return root.dump(1);
}

void write_new_model(const std::string& preset, const std::string& dir, uint64_t seed, const std::string& tokenizer_dir) {
  ModelConfig config = preset_config(preset);
  std::filesystem::create_directories(dir);
  torch::manual_seed(seed);
  Qwen2Model model(config, false);
  save_qwen2(model, dir);
  if (!tokenizer_dir.empty()) {
    copy_tokenizer_files(tokenizer_dir, dir);
  } else if (preset == "tiny") {
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
