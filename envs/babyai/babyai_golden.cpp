#include "envs/babyai/babyai_golden.h"

#include <stdexcept>

#include <nlohmann/json.hpp>

#include "envs/babyai/babyai_env.h"
#include "envs/babyai/babyai_family.h"
#include "envs/common/json_integer.h"

namespace turnrl::envs::babyai {
namespace {

constexpr std::string_view kGoldenPrefix = "BabyAI-MixedTrainLocal-v0/";

nlohmann::json encode_rows(const std::vector<std::string>& rows) { return nlohmann::json(rows); }

/** The recording's distractor count as an env option, unchecked (read_num_dists or make_env checks it). */
nlohmann::json num_dists_option(const nlohmann::json& golden) {
  return {{"num_dists", golden.value("num_dists", nlohmann::json(0))}};
}

/** Replays the BabyAI golden format (../shared/spec/babyai_baba.md C.3). */
class BabyAIReplayer final : public GoldenReplayer {
 public:
  BabyAIReplayer(std::string id, Task task) : id_(std::move(id)), task_(task) {}

  nlohmann::json replay(const nlohmann::json& golden) override {
    nlohmann::json out;
    if (golden.at("type") == "reset") {
      // Recordings with distractors name their count; BALROG's default is 0. Checked as the registry
      // checks the option: level generation cannot place more than the rooms hold.
      env_ = std::make_unique<BabyAIEnv>(id_, task_, read_num_dists(id_, num_dists_option(golden)));
      std::vector<RngCall> trace;
      env_->set_rng_trace(&trace);
      env_->reset(json_integer<uint64_t>(golden.at("seed")));
      env_->set_rng_trace(nullptr);
      const Level& level = env_->level();
      out["subtask"] = task_name(env_->task());
      out["num_rows"] = level.num_rows;
      out["num_cols"] = level.num_cols;
      out["width"] = level.world.grid.width();
      out["height"] = level.world.grid.height();
      out["instruction_prompt_mission"] = level.mission;
      nlohmann::json calls = nlohmann::json::array();
      for (const RngCall& call : trace) calls.push_back({"integers", call.low, call.high, call.result});
      out["rng_trace"] = std::move(calls);
    } else {
      out = replay_step(*env_, golden);
    }
    add_state(out);
    return out;
  }

  bool is_input_field(const std::string& key) const override {
    return key == "type" || key == "env_id" || key == "seed" || key == "num_dists" || key == "actions" || key == "t" ||
           key == "action";
  }

  std::optional<EnvApiLine> env_api_line(const nlohmann::json& golden) override {
    const nlohmann::json observation = {{"long_term", golden.at("text")}};
    if (golden.at("type") != "reset") return env_api_step(golden, observation);
    EnvApiLine line;
    line.is_reset = true;
    line.env_id = id_;
    line.options = num_dists_option(golden);
    line.seed = json_integer<uint64_t>(golden.at("seed"));
    line.expected = {{"observation", observation}, {"goal", golden.at("mission")}, {"max_steps", golden.at("max_steps")}};
    return line;
  }

 private:
  void add_state(nlohmann::json& out) const {
    const Level& level = env_->level();
    const World& world = level.world;
    out["agent_pos"] = {world.agent_pos.x, world.agent_pos.y};
    out["agent_dir"] = world.agent_dir;
    if (world.carrying == Grid::kEmpty) {
      out["carrying"] = nullptr;
    } else {
      const WorldObject& obj = world.objects[world.carrying];
      out["carrying"] = {type_name(obj.type), color_name(obj.color)};
    }
    out["mission"] = level.mission;
    out["step_count"] = world.step_count;
    out["max_steps"] = world.max_steps;
    std::vector<std::string> grid(world.grid.height());
    for (int y = 0; y < world.grid.height(); ++y) {
      for (int x = 0; x < world.grid.width(); ++x) append_hex(grid[y], encode_cell(world.grid.at({x, y}), world.objects));
    }
    out["grid"] = encode_rows(grid);
    const ViewImage image = world.view();
    std::vector<std::string> view(kViewSize);
    for (int y = 0; y < kViewSize; ++y) {
      for (int x = 0; x < kViewSize; ++x) append_hex(view[y], image[x][y]);
    }
    out["image"] = encode_rows(view);
    out["descriptions"] = world.descriptions();
    out["text"] = env_->observe_text().long_term;
  }

  std::string id_;
  Task task_;
  std::unique_ptr<BabyAIEnv> env_;
};

}  // namespace

std::unique_ptr<GoldenReplayer> make_golden_replayer(const nlohmann::json& first) {
  const std::string env_id = first.value("env_id", "");
  if (env_id.rfind(kGoldenPrefix, 0) != 0) return nullptr;
  const std::string suffix = env_id.substr(kGoldenPrefix.size());
  for (const auto& task : kTasks) {
    if (suffix == task.suffix) {
      return std::make_unique<BabyAIReplayer>("babyai/" + suffix, task.task);
    }
  }
  throw std::runtime_error("golden file names an unknown BabyAI task '" + env_id + "'");
}

}  // namespace turnrl::envs::babyai
