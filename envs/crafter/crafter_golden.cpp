#include "envs/crafter/crafter_golden.h"

#include <stdexcept>

#include <nlohmann/json.hpp>

#include "envs/common/json_integer.h"
#include "envs/common/sha256.h"
#include "envs/crafter/balrog_text.h"
#include "envs/crafter/crafter_env.h"
#include "envs/crafter/crafter_family.h"
#include "envs/reply_parser.h"

namespace turnrl::envs::crafter {
namespace {

/** Replays both Crafter golden formats (../shared/spec/crafter.md section 11 and
 *  ../shared/golden/crafter_text/README.md). Inputs: the record type, the first line's
 *  metadata, the plain format's `action` and the text format's `completion`. */
class CrafterReplayer final : public GoldenReplayer {
 public:
  CrafterReplayer(const nlohmann::json& first, bool text)
      : text_(text), first_(first), seed_(json_integer<uint64_t>(first.at("seed"))) {
    CrafterConfig config;
    config.balrog = text;
    config.area = read_pair("golden", "area", first.at("area"), 16);
    config.view = read_pair("golden", "view", first.at("view"), 3);
    config.size = read_pair("golden", "size", first.at("size"), 1);
    config.length = json_integer<int>(first.at("length"));
    if (text) config.balrog_max_steps = json_integer<int>(first.at("balrog_max_steps"));
    env_ = std::make_unique<CrafterEnv>(text ? kBalrogId : kPlainId, config);
  }

  nlohmann::json replay(const nlohmann::json& golden) override {
    nlohmann::json out;
    if (golden.at("type") == "reset") {
      env_->reset_episode(seed_, ++episode_);
      out["action"] = nullptr;
      out["action_name"] = nullptr;
      out["reward"] = 0.0;
      out["done"] = false;
      out["world_seed"] = env_->world_seed();
      if (text_) {
        out["episode_step"] = env_->episode_step();
        out["instruction_prompt"] = env_->instruction_prompt();
        add_text(out, "");
      }
    } else {
      ++steps_;
      int action = 0;
      std::string feedback;
      if (text_) {
        const std::string completion = golden.at("completion").get<std::string>();
        const auto& actions = env_->actions();
        int index = -1;
        for (size_t i = 0; i < actions.size(); ++i) {
          if (actions[i].name == completion) index = static_cast<int>(i);
        }
        action = index >= 0 ? index : env_->default_action();
        const std::string& executed = actions[action].name;
        out["balrog_action"] = executed;
        out["action_valid"] = index >= 0;
        if (index < 0) feedback = invalid_action_feedback(executed);
        out["feedback"] = index >= 0 ? nlohmann::json(nullptr) : nlohmann::json(feedback);
      } else {
        action = json_integer<int>(golden.at("action"));
      }
      const StepResult result = env_->step(action);
      out["action"] = action;
      out["action_name"] = std::string(action_name(action));
      out["reward"] = result.reward;
      out["done"] = env_->crafter_done();
      out["episode_step"] = env_->episode_step();
      if (text_) {
        // BALROG's 2000-step limit is the evaluator's loop, not a truncation its env reports.
        out["terminated"] = env_->crafter_done();
        out["truncated"] = false;
        add_text(out, feedback);
      }
    }
    out["step"] = steps_;
    out["episode"] = env_->episode();
    add_state(out);
    return out;
  }

  bool is_input_field(const std::string& key) const override {
    static const char* kInputs[] = {"type", "format", "seed", "area", "view", "size", "length", "render",
                                    "canonical_despawn_order", "steps", "episodes", "actions", "policy",
                                    "action_seed", "set", "balrog_task", "balrog_crafter_kwargs",
                                    "balrog_max_steps", "feedback_on_invalid_action", "invalid_completion",
                                    "completion"};
    for (const char* input : kInputs) {
      if (key == input) return true;
    }
    // The plain format's action is its input; the text format's is the executed action.
    return !text_ && key == "action";
  }

  /** Only the text format (the plain one records no Env outputs beyond reward), and only its
   *  first episode: Env::reset(seed) starts episode 1 of a seed, the file's later episodes come
   *  from further resets of the same crafter.Env. */
  std::optional<EnvApiLine> env_api_line(const nlohmann::json& golden) override {
    if (!text_ || first_.at("balrog_max_steps") != CrafterConfig{}.balrog_max_steps) return std::nullopt;
    // A step's `action` is the executed one (the default action for an invalid answer).
    if (golden.at("type") != "reset") return env_api_step(golden, observation(golden));
    if (++api_episode_ > 1) return std::nullopt;
    EnvApiLine line;
    line.is_reset = true;
    line.env_id = kBalrogId;
    line.options = {{"area", first_.at("area")}, {"view", first_.at("view")}, {"size", first_.at("size")},
                    {"length", first_.at("length")}};
    line.seed = seed_;
    line.expected = {{"observation", observation(golden)}, {"instruction_prompt", golden.at("instruction_prompt")}};
    return line;
  }

 private:
  /** The env's text: the golden one without the evaluator's feedback prefix. */
  static nlohmann::json observation(const nlohmann::json& golden) {
    const nlohmann::json& text = golden.at("text_obs");
    std::string long_term = text.at("long_term_context").get<std::string>();
    const nlohmann::json feedback = golden.value("feedback", nlohmann::json());
    if (feedback.is_string() && long_term.starts_with(feedback.get<std::string>())) {
      long_term.erase(0, feedback.get<std::string>().size());
    }
    return {{"long_term", long_term}, {"short_term", text.at("short_term_context")}};
  }

  void add_text(nlohmann::json& out, const std::string& feedback) const {
    const TextObservation text = env_->observe_text();
    out["text_obs"] = {{"long_term_context", feedback + text.long_term}, {"short_term_context", text.short_term}};
  }

  void add_state(nlohmann::json& out) const {
    const Player& player = env_->player();
    const World& world = env_->world();
    const Pos pos = env_->player_pos();
    out["pos"] = {pos.x, pos.y};
    out["facing"] = {player.facing.x, player.facing.y};
    out["sleeping"] = player.sleeping;
    nlohmann::json inventory = nlohmann::json::object();
    for (int i = 0; i < kNumItems; ++i) inventory[std::string(item_name(i))] = player.inventory[i];
    for (int vital : {item::kHealth, item::kFood, item::kDrink, item::kEnergy}) {
      out[std::string(item_name(vital))] = player.inventory[vital];
    }
    out["inventory"] = std::move(inventory);
    nlohmann::json achievements = nlohmann::json::array();
    for (int a = 0; a < kNumAchievements; ++a) {
      if (env_->unlocked()[a]) achievements.push_back(std::string(achievement_name(a)));
    }
    out["achievements"] = std::move(achievements);
    out["counters"] = {{"hunger", player.hunger}, {"thirst", player.thirst}, {"fatigue", player.fatigue},
                       {"recover", player.recover}};
    out["daylight"] = world.daylight;
    const std::vector<uint8_t> semantic = env_->semantic_map();
    out["sem_sha256"] = sha256_hex(semantic.data(), semantic.size());
    nlohmann::json view = nlohmann::json::array();
    for (const auto& row : env_->local_view(4)) {
      std::string line;
      for (const std::string& name : row) line += (line.empty() ? "" : " ") + name;
      view.push_back(line);
    }
    out["local_view"] = std::move(view);
    nlohmann::json counts = nlohmann::json::object();
    std::array<int, kNumKinds> per_kind{};
    // live_slots() compacts lazily, so count through the object map instead.
    for (int x = 0; x < world.width(); ++x) {
      for (int y = 0; y < world.height(); ++y) {
        if (const int slot = world.object_at({x, y})) ++per_kind[static_cast<int>(world.object(slot).kind)];
      }
    }
    for (int k = 0; k < kNumKinds; ++k) counts[std::string(kind_name(static_cast<Kind>(k)))] = per_kind[k];
    out["counts"] = std::move(counts);
    out["rng_draws"] = world.random.draws();
    out["rng_pos"] = world.random.position();
  }

  bool text_;
  nlohmann::json first_;  // the metadata line
  uint64_t seed_;
  std::unique_ptr<CrafterEnv> env_;
  int episode_ = 0;
  long steps_ = 0;
  int api_episode_ = 0;  // resets seen by env_api_line()
};

}  // namespace

std::unique_ptr<GoldenReplayer> make_golden_replayer(const nlohmann::json& first) {
  const std::string format = first.value("format", "");
  if (format == "crafter-golden-v1") return std::make_unique<CrafterReplayer>(first, false);
  if (format == "crafter-balrog-text-v1") return std::make_unique<CrafterReplayer>(first, true);
  return nullptr;
}

}  // namespace turnrl::envs::crafter
