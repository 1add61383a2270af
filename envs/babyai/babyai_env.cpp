#include "envs/babyai/babyai_env.h"

#include <stdexcept>

#include "envs/common/state_writer.h"

namespace turnrl::envs::babyai {

std::string_view task_name(Task task) {
  static constexpr std::string_view kNames[] = {"goto", "pickup", "open", "putnext", "pick up seq go to"};
  return kNames[static_cast<int>(task)];
}

BabyAIEnv::BabyAIEnv(std::string id, Task task, int num_dists)
    : id_(std::move(id)), task_(task), generator_(task, num_dists) {}

void BabyAIEnv::require_reset() const {
  if (!has_reset_) throw std::logic_error("env " + id_ + ": call reset() before stepping or observing");
}

void BabyAIEnv::reset(uint64_t seed) {
  generator_.generate(seed, level_, trace_);
  has_reset_ = true;
  succeeded_ = false;
}

StepResult BabyAIEnv::step(int action) {
  check_action(action);
  require_reset();
  World& world = level_.world;
  ++world.step_count;
  world.apply_action(action);
  StepResult result;
  result.truncated = world.step_count >= world.max_steps;
  if (action == kDrop) level_.instruction->refresh_positions(world);
  if (level_.instruction->verify(world, action) == Status::kSuccess) {
    result.terminated = true;
    result.reward = 1.0 - 0.9 * (static_cast<double>(world.step_count) / world.max_steps);
    succeeded_ = true;
  }
  return result;
}

std::string BabyAIEnv::serialize_state() const {
  require_reset();
  const World& world = level_.world;
  StateWriter out;
  out.put(world.grid.width());
  out.put(world.grid.height());
  for (int y = 0; y < world.grid.height(); ++y) {
    for (int x = 0; x < world.grid.width(); ++x) out.put(world.grid.at({x, y}));
  }
  out.put(world.objects.size());
  for (const WorldObject& obj : world.objects) {
    out.put(obj.type);
    out.put(obj.color);
    out.put(obj.is_open);
    out.put(obj.is_locked);
    out.put(obj.cur_pos.x);
    out.put(obj.cur_pos.y);
  }
  out.put(world.agent_pos.x);
  out.put(world.agent_pos.y);
  out.put(world.agent_dir);
  out.put(world.carrying);
  out.put(world.max_steps);
  out.put(level_.mission);
  level_.instruction->append_state(out);
  out.put(succeeded_);
  return out.take();
}

const std::vector<ActionSpec>& BabyAIEnv::action_list() {
  static const std::vector<ActionSpec> kActions = {
      {"turn left", "turn to the left"},
      {"turn right", "turn to the right"},
      {"go forward", "take one step forward"},
      {"pick up", "pick up the object below you"},
      {"drop", "drop the object that you are holding"},
      {"toggle", "manipulate the object in front of you"},
  };
  return kActions;
}

const ActionTextRules& BabyAIEnv::text_rules() const {
  static const ActionTextRules kRules = [] {
    ActionTextRules rules;
    rules.translations = {{"turnleft", {"turn left"}},
                          {"turnright", {"turn right"}},
                          {"goforward", {"go forward"}},
                          {"pickup", {"pick up"}}};
    return rules;
  }();
  return kRules;
}

std::string BabyAIEnv::instruction_prompt() const {
  require_reset();
  std::string action_lines;
  for (const auto& action : actions()) {
    if (!action_lines.empty()) action_lines += ",\n";
    action_lines += action.name + ": " + action.description;
  }
  return "You are an agent playing a simple navigation game. Your goal is to " + level_.mission +
         ". The following are the possible actions you can take in the game, followed by a short description of "
         "each action:\n\n" +
         action_lines +
         ".\n\nIn a moment I will present you an observation.\n\nTips:\n"
         "- Once the desired object you want to interact or pickup in front of you, you can use the 'toggle' "
         "action to interact with it.\n"
         "- It doesn't make sense to repeat the same action over and over if the observation doesn't change.\n\n"
         "PLAY!";
}

TextObservation BabyAIEnv::observe_text() const {
  require_reset();
  TextObservation text;
  static constexpr std::string_view kPrefix = "You see ";
  for (const std::string& line : level_.world.descriptions()) {
    if (!text.long_term.empty()) text.long_term += '\n';
    // BALROG removes every "You see " (it only ever starts a line).
    text.long_term += line.rfind(kPrefix, 0) == 0 ? line.substr(kPrefix.size()) : line;
  }
  return text;
}

std::string BabyAIEnv::render_ascii() const {
  require_reset();
  static constexpr char kColorLetters[] = {'r', 'g', 'b', 'p', 'y', 'e'};
  static constexpr const char* kAgent[] = {">>", "vv", "<<", "^^"};
  const World& world = level_.world;
  std::string out = "mission: " + level_.mission + "\n";
  for (int y = 0; y < world.grid.height(); ++y) {
    for (int x = 0; x < world.grid.width(); ++x) {
      const int16_t cell = world.grid.at({x, y});
      if (Pos{x, y} == world.agent_pos) {
        out += kAgent[world.agent_dir];
      } else if (cell == Grid::kWall) {
        out += "##";
      } else if (cell == Grid::kEmpty) {
        out += " .";
      } else {
        const WorldObject& obj = world.objects[cell];
        char letter = "??DKAB"[std::min<int>(static_cast<int>(obj.type) - 2, 5)];
        if (obj.type == ObjectType::kDoor) letter = obj.is_open ? 'd' : (obj.is_locked ? 'L' : 'D');
        out += letter;
        out += kColorLetters[static_cast<int>(obj.color)];
      }
    }
    out += '\n';
  }
  out += "legend: ## wall, K key, A ball, B box, D closed door, d open door, L locked door; colour r g b p y e(grey); "
         "agent >> vv << ^^";
  if (world.carrying != Grid::kEmpty) {
    const WorldObject& obj = world.objects[world.carrying];
    out += "\ncarrying: " + std::string(color_name(obj.color)) + " " + std::string(type_name(obj.type));
  }
  return out;
}

}  // namespace turnrl::envs::babyai
