#include "envs/babaisai/babaisai_env.h"

#include <stdexcept>

#include "envs/babaisai/text.h"
#include "envs/common/state_writer.h"

namespace turnrl::envs::babaisai {

BabaIsAIEnv::BabaIsAIEnv(std::string id, LevelConfig config, int max_steps, int rule_change_reward)
    : id_(std::move(id)), config_(config), max_steps_(max_steps), rule_change_reward_(rule_change_reward / 100.0) {}

void BabaIsAIEnv::require_reset() const {
  if (!has_reset_) throw std::logic_error("env " + id_ + ": call reset() before stepping or observing");
}

void BabaIsAIEnv::generate() {
  TracedRandom random(random_, trace_);
  target_plan_ = generate_level(config_, random, world_);
  world_.max_steps = max_steps_;
  progression_ = 0.0;
  you_pos_ = you_position(world_).value();  // every generator writes "baba is you" and places baba
  rule_changes_.start_level(world_.rules);
}

void BabaIsAIEnv::reset(uint64_t seed) {
  if (seed > 0xFFFFFFFFULL) {
    throw std::out_of_range("env " + id_ + ": seed " + std::to_string(seed) +
                            " does not fit numpy's np.random.seed (must be below 2**32)");
  }
  random_.seed_with(static_cast<uint32_t>(seed));
  rule_changes_.start_episode();
  generate();
  has_reset_ = true;
  level_was_reset_ = false;
}

StepResult BabaIsAIEnv::step(int action) {
  check_action(action);
  require_reset();
  const StepOutcome outcome = world_.step(action);
  if (outcome.done) progression_ = outcome.reward > 0 ? 1.0 : 0.0;
  const std::optional<Pos> you = you_position(world_);
  level_was_reset_ = !you.has_value();
  if (you) {
    you_pos_ = *you;
  } else {
    // BALROG's text routine finds no "you" object and resets the env without a seed: the global
    // generator continues, step_count restarts and the episode goes on in the new level.
    rules_before_reset_ = rules_text(world_);
    generate();
  }
  StepResult result;
  result.reward = outcome.reward;
  if (you && rule_change_reward_ > 0.0) result.reward += rule_change_reward_ * rule_changes_.count_new(world_.rules);
  result.terminated = outcome.done;  // gym-compatibility: done -> terminated, never truncated
  return result;
}

std::string BabaIsAIEnv::serialize_state() const {
  require_reset();
  StateWriter out;
  world_.write_grid(out);
  out.put(you_pos_.x);
  out.put(you_pos_.y);
  out.put(level_was_reset_);
  out.put(level_was_reset_ ? rules_before_reset_ : std::string());
  out.put(target_plan_);
  out.put(progression_);
  if (rule_change_reward_ > 0.0) rule_changes_.write(out);
  return out.take();
}

const std::vector<ActionSpec>& BabaIsAIEnv::action_list() {
  static const std::vector<ActionSpec> kActions = {
      {"idle", "wait for one step"},
      {"up", "take one step up"},
      {"right", "take one step to the right"},
      {"down", "take one step down"},
      {"left", "take one step to the left"},
  };
  return kActions;
}

const ActionTextRules& BabaIsAIEnv::text_rules() const {
  static const ActionTextRules kRules;  // lower case, '_' -> ' ', no synonyms
  return kRules;
}

std::string BabaIsAIEnv::instruction_prompt() const {
  std::string action_lines;
  for (const auto& action : actions()) {
    if (!action_lines.empty()) action_lines += ",\n";
    action_lines += action.name + ": " + action.description;
  }
  return "Baba Is You is a puzzle game where you can manipulate the rules of each level. The following are the "
         "possible actions you can take in the game, followed by a short description of each action:\n\n" +
         action_lines +
         ".\n\nTips:\n"
         "- Examine the level carefully, noting all objects and text blocks present.\n"
         "- Identify the current rules, which are formed by text blocks in the format \"[Subject] IS [Property]\" "
         "(e.g. \"BABA IS YOU\").\n"
         "- Consider how you can change or create new rules by moving text blocks around.\n"
         "- Remember that you can only move objects or text that are not defined as \"STOP\" or similar immovable "
         "properties.\n"
         "- Your goal is usually to reach an object defined as \"WIN\", but this can be changed.\n"
         "- Think creatively about how changing rules can alter the properties and behaviors of objects in "
         "unexpected ways.\n"
         "- If stuck, try breaking apart existing rules or forming completely new ones.\n"
         "- Sometimes the solution involves making yourself a different object or changing what counts as the win "
         "condition.\n\n"
         "PLAY!";
}

TextObservation BabaIsAIEnv::observe_text() const {
  require_reset();
  TextObservation text;
  const std::string current = observation_text(world_, you_pos_);
  if (level_was_reset_) {
    // BALROG prints the rules of the broken level, then the Python repr of the new observation
    // (with memory addresses); we print the new observation's text in place of that repr.
    text.long_term = std::string(kResetNotice) + "Active rules:\n" + rules_before_reset_ +
                     "\n\nObjects on the map:\n" + current;
  } else {
    text.long_term = current;
  }
  return text;
}

std::string BabaIsAIEnv::render_ascii() const {
  require_reset();
  const Grid& grid = world_.grid;
  std::string out = "target plan: " + target_plan_ + "\n";
  for (int y = 0; y < grid.height(); ++y) {
    for (int x = 0; x < grid.width(); ++x) {
      const ObjectId id = grid.top(Pos{x, y});
      std::string cell;
      if (id == kNoObject) {
        cell = ".";
      } else if (world_.objects[id].kind == Kind::kBorder) {
        cell = "####";
      } else if (world_.objects[id].kind == Kind::kThing) {
        cell = std::string(word(world_.objects[id]));
      } else {
        for (char c : word(world_.objects[id])) cell += static_cast<char>(c - 'a' + 'A');
      }
      cell.resize(5, ' ');
      out += cell;
    }
    out += '\n';
  }
  out += "rules: ";
  const std::string rules = rules_text(world_);
  for (char c : rules) out += c == '\n' ? std::string(", ") : std::string(1, c);
  out += "\nlegend: lower case = things, UPPER CASE = rule blocks, #### = border; step " +
         std::to_string(world_.step_count) + "/" + std::to_string(max_steps_);
  return out;
}

}  // namespace turnrl::envs::babaisai
