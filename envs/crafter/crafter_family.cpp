#include "envs/crafter/crafter_family.h"

#include <stdexcept>

#include <nlohmann/json.hpp>

#include "envs/reply_parser.h"
#include "envs/common/sha256.h"
#include "envs/crafter/balrog_text.h"
#include "envs/crafter/crafter_env.h"
#include "envs/crafter/crafter_expert.h"
#include "envs/crafter/crafter_golden.h"

namespace turnrl::envs::crafter {
Pos read_pair(const std::string& id, const std::string& key, const nlohmann::json& value, int min_value) {
  auto valid = [&](const nlohmann::json& v) { return v.is_number_integer() && v.get<int64_t>() >= min_value && v.get<int64_t>() <= 4096; };
  if (valid(value)) return {value.get<int>(), value.get<int>()};
  if (value.is_array() && value.size() == 2 && valid(value[0]) && valid(value[1])) {
    return {value[0].get<int>(), value[1].get<int>()};
  }
  throw std::invalid_argument("env " + id + ": option " + key + " must be an integer or a pair of integers in [" +
                              std::to_string(min_value) + ", 4096], got " + value.dump());
}

namespace {

CrafterConfig parse_config(const std::string& id, const nlohmann::json& options) {
  CrafterConfig config;
  config.balrog = id == kBalrogId;
  if (config.balrog) config.size = {256, 256};
  for (const auto& [key, value] : options.items()) {
    if (key == "area") {
      config.area = read_pair(id, key, value, 16);
    } else if (key == "view") {
      config.view = read_pair(id, key, value, 3);
    } else if (key == "size") {
      config.size = read_pair(id, key, value, 1);
    } else if (key == "length") {
      if (!value.is_number_integer() || value.get<int64_t>() < 0 || value.get<int64_t>() > 100000000) {
        throw std::invalid_argument("env " + id + ": option length must be a non-negative integer (0: unlimited), got " +
                                    value.dump());
      }
      config.length = value.get<int>();
    } else {
      throw std::invalid_argument("env " + id + ": unknown option '" + key + "' (valid: area, view, size, length)");
    }
  }
  return config;
}

std::unique_ptr<Env> make(const std::string& id, const nlohmann::json& options) {
  if (id != kPlainId && id != kBalrogId) throw std::invalid_argument("unknown crafter env id '" + id + "'");
  return std::make_unique<CrafterEnv>(id, parse_config(id, options));
}

}  // namespace

EnvFamily crafter_family() {
  EnvFamily family;
  family.name = "crafter";
  family.ids = {kPlainId, kBalrogId};
  family.actions = balrog_actions();
  family.options = {{"area", "[64, 64]", "world size [width, height] (each >= 16)"},
                    {"view", "[9, 9]", "local view [width, height] (each >= 3)"},
                    {"size", "[64, 64] ([256, 256] for crafter/balrog)", "image size [width, height]"},
                    {"length", "10000", "turn limit of an episode (0: unlimited)"}};
  family.verlog_history_entry = HistoryEntry::kReplyWithExecuted;
  // The words of BALROG's Crafter prompts and observations (beyond BabyAI's and BabaIsAI's).
  family.vocabulary = {
    "Coal", "Collect", "Cow", "Crafter", "Defeat", "Diamond", "Do", "Drink", "East", "Eat", "Furnace", "Iron",
    "Make", "Move", "Multiuse", "Noop", "North", "Pickaxe", "Place", "Plant", "Sapling", "Skeleton", "Sleep",
    "South", "Stone", "Sword", "Table", "These", "Up", "Wake", "West", "Wood", "Zombie", "achievements",
    "coal", "collect", "completing", "cow", "craft", "creature", "diamond", "do", "drink", "east", "energy",
    "face", "far", "flat", "food", "from", "furnace", "get", "grass", "ground", "health", "hit", "inventory",
    "iron", "lake", "lava", "material", "maximum", "nearby", "north", "nothing", "observations", "path",
    "pickaxe", "place", "plant", "push", "sand", "sapling", "skeleton", "sleep", "sleeping", "south",
    "status", "stone", "sword", "table", "tree", "water", "west", "when", "wood", "your", "zombie", "died",
    "arrow"};
  family.make = make;
  family.expert_sights = {ExpertSight::kFull, ExpertSight::kView};
  family.expert = [](const Env& env, uint64_t seed, ExpertSight sight) {
    return crafter::expert_move(expert_env<CrafterEnv>(env), seed, sight);
  };
  family.replayer = make_golden_replayer;
  return family;
}

}  // namespace turnrl::envs::crafter
