// Config as data (trainer/config/config_schema.h): the shipped configs load to the values the loader
// before the key declarations gave (later configs: the loader that added them), renamed keys are
// refused naming the new name, overrides are checked as the file's keys, and docs/config.md is
// `turnrl config --reference`.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include <yaml-cpp/yaml.h>

#include "test_util.h"
#include "tools/eval_config.h"
#include "trainer/config/train_config.h"

namespace fs = std::filesystem;
using turnrl::test::run_turnrl;
using turnrl::tools::load_eval_config;
using turnrl::trainer::TrainConfig;

namespace {

const std::string kSource = TURNRL_SOURCE_DIR;

/** Every scalar of `node` as `path = value`, lists by index: a text that compares values, not layout. */
void flatten(const YAML::Node& node, const std::string& path, std::map<std::string, std::string>& out) {
  if (node.IsMap()) {
    for (const auto& entry : node) flatten(entry.second, path + "." + entry.first.Scalar(), out);
  } else if (node.IsSequence()) {
    for (size_t i = 0; i < node.size(); ++i) flatten(node[i], path + "[" + std::to_string(i) + "]", out);
  } else {
    out[path] = node.Scalar();
  }
}
std::map<std::string, std::string> flat(const std::string& yaml) {
  std::map<std::string, std::string> out;
  flatten(YAML::Load(yaml), "", out);
  return out;
}
std::string read_text(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}
std::string write_file(const std::string& name, const std::string& text) {
  const std::string path = (fs::temp_directory_path() / ("turnrl_test_config_" + name)).string();
  std::ofstream(path) << text;
  return path;
}
std::string load_error(const std::string& path, const std::vector<std::string>& overrides = {}) {
  try {
    TrainConfig::load(path, overrides);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "";
}
std::string eval_error(const std::string& path) {
  try {
    load_eval_config(path);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("every shipped config loads to its fixture: the loader before issue 47, or the one that added the config") {
  size_t checked = 0;
  for (const auto& entry : fs::directory_iterator(kSource + "/configs")) {
    const std::string name = entry.path().filename().string();
    const std::string before = read_text(kSource + "/tests/data/config_before_47/" + name);
    const std::string missing = name + " has no fixture: add it from the loader it must match";
    REQUIRE_MESSAGE(!before.empty(), missing);
    const std::string now = name.starts_with("eval-") ? turnrl::tools::eval_config_yaml(load_eval_config(entry.path().string()))
                                                      : TrainConfig::load(entry.path().string()).to_yaml();
    CHECK_MESSAGE(flat(now) == flat(before), name);
    ++checked;
  }
  CHECK(checked == 24);
  // Every default, the format stage's and the reward sections' included.
  const std::string defaults = write_file("defaults.yaml", "model: {path: m}\nformat: {model: f}\n"
                                                             "reward: {manager: [env, process], scorer: {url: \"http://127.0.0.1:1/score\"}}\n");
  CHECK(flat(TrainConfig::load(defaults).to_yaml()) == flat(read_text(kSource + "/tests/data/config_before_47/defaults.yaml")));
}

TEST_CASE("to_yaml reads back to itself, enums included") {
  const std::string path = write_file("round.yaml",
                                      "model: {path: m}\nformat: {model: f, policy: expert, expert_sight: view, lr_schedule: cosine, final_lr_schedule: constant}\n"
                                      "env: {id: [babyai/goto, babyai/open], group_size: 2}\nturn: {layout: compact, suffix: none, history_entry: family}\n"
                                      "ppo: {estimator: rloo}\nreward: {manager: [episode, process]}\nrun: {eval_decoding: sampled}\n");
  const TrainConfig config = TrainConfig::load(path);
  CHECK(config.format.policy == turnrl::trainer::FormatPolicy::kExpert);
  CHECK(config.format.expert_sight == turnrl::envs::ExpertSight::kView);
  CHECK(config.format.final_lr_schedule == turnrl::trainer::LrSchedule::kConstant);
  CHECK(config.ppo.estimator == turnrl::trainer::Estimator::kRloo);
  CHECK(config.reward.manager == TrainConfig::Reward::Manager::kEpisode);
  CHECK(config.run.eval_decoding == TrainConfig::Run::Decoding::kSampled);
  const std::string yaml = config.to_yaml();
  CHECK(TrainConfig::load(write_file("round2.yaml", yaml)).to_yaml() == yaml);
}

TEST_CASE("an enum key lists its values; an unknown key names itself and the file") {
  const std::string base = "model: {path: m}\n";
  CHECK(load_error(write_file("e1.yaml", base + "run:\n  eval_decoding: beam\n")) ==
        write_file("e1.yaml", base + "run:\n  eval_decoding: beam\n") + ":3: run.eval_decoding: must be greedy or sampled, got 'beam'");
  CHECK(load_error(write_file("e2.yaml", base + "format:\n  model: f\n  policy: teacher\n")).find("format.policy: must be random or expert") !=
        std::string::npos);
  const std::string unknown = write_file("e3.yaml", base + "ppo:\n  clip: 0.1\n  clipp: 0.2\n");
  CHECK(load_error(unknown) == unknown + ":4: ppo.clipp: unknown key");
}

TEST_CASE("overrides are checked as the file's keys and named --set") {
  const std::string path = write_file("o.yaml", "model: {path: m}\nrun: {iterations: 5}\n");
  const TrainConfig config = TrainConfig::load(path, {"run.iterations=7", "env.id=[babyai/goto, babyai/open]", "ppo.estimator=reinforce++"});
  CHECK(config.run.iterations == 7);
  CHECK(config.env.ids == std::vector<std::string>{"babyai/goto", "babyai/open"});
  CHECK(config.ppo.estimator == turnrl::trainer::Estimator::kReinforcePlusPlus);
  CHECK(load_error(path, {"run.iterations=0"}) == "--set: run.iterations: must be > 0");
  CHECK(load_error(path, {"ppo.clipp=1"}) == "--set: ppo.clipp: unknown key");
  CHECK(load_error(path, {"iterations"}).find("--set expects section.key=value") != std::string::npos);
  // A format section that only overrides make (make-sft-data's data keys) needs no stage folder;
  // one the file writes does.
  CHECK(TrainConfig::load(path, {"format.policy=expert"}).format.policy == turnrl::trainer::FormatPolicy::kExpert);
  CHECK(load_error(write_file("o2.yaml", "model: {path: m}\nformat: {policy: expert}\n")).find("format.model: is required") != std::string::npos);
}

TEST_CASE("turnrl sft reads the format section's fine-tuning keys, declared once") {
  const turnrl::trainer::FineTuning tuning = TrainConfig::fine_tuning({"format.epochs=4", "format.lr_schedule=cosine", "format.lr=3e-3"});
  CHECK(tuning.epochs == 4);
  CHECK(tuning.lr == doctest::Approx(3e-3));
  CHECK(tuning.lr_schedule == turnrl::trainer::LrSchedule::kCosine);
  CHECK(tuning.batch_size == turnrl::trainer::FineTuning{}.batch_size);
  const auto error = [](const std::vector<std::string>& overrides) {
    try {
      TrainConfig::fine_tuning(overrides);
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  CHECK(error({"format.batch_size=0"}) == "--set: format.batch_size: must be > 0");
  CHECK(error({"format.policy=expert"}) == "--set: format.policy: unknown key");  // a data key: make-sft-data's
  CHECK(error({"ppo.clip=0.1"}) == "--set: ppo: unknown key");
}

TEST_CASE("eval sweeps: a renamed key is refused naming its new name") {
  const std::string models = "models:\n  - {name: e, type: expert}\n";
  const std::string tasks = write_file("r1.yaml", "tasks: [babyai/goto]\n" + models);
  CHECK(eval_error(tasks) == tasks + ":1: key 'tasks' was renamed to 'env.id'");
  const std::string sight = write_file("r2.yaml", "env: {id: babyai/goto}\nmodels:\n  - {name: a, type: random}\n  - {name: e, type: expert, sight: view}\n");
  CHECK(eval_error(sight) == sight + ":4: key 'models[1].sight' was renamed to 'models[1].expert_sight'");
  for (const char* old_key : {"max_new_tokens: 8", "timeout_s: 5"}) {
    const std::string path = write_file("r3.yaml", "env: {id: babyai/goto}\nmodels:\n  - {name: h, type: llm, path: p, " + std::string(old_key) + "}\n");
    CHECK(eval_error(path).find("was renamed to 'models[0].") != std::string::npos);
  }
  const std::string good = write_file("r4.yaml", "env: {id: babyai/goto}\nmodels:\n  - {name: h, type: http, base_url: u, model: m, timeout: 5, max_response_tokens: 9}\n");
  const auto config = load_eval_config(good);
  CHECK(config.models[0].timeout_s == 5.0);
  CHECK(config.models[0].max_new_tokens == 9);
  CHECK(eval_error(write_file("r5.yaml", "env: {id: babyai/goto}\nmodels:\n  - {name: h}\n")).find("models[0].type: is required") != std::string::npos);
}

TEST_CASE("turnrl config --reference lists every key, and docs/config.md is its output") {
  const auto result = run_turnrl("config --reference");
  REQUIRE(result.exit_code == 0);
  for (const auto& row : TrainConfig::reference()) CHECK_MESSAGE(result.output.find("| `" + row.path + "` |") != std::string::npos, row.path);
  for (const auto& row : turnrl::tools::eval_config_reference()) CHECK_MESSAGE(result.output.find("| `" + row.path + "` |") != std::string::npos, row.path);
  CHECK(result.output.find("| `ppo.estimator` | gae \\| reinforce++ \\| grpo \\| token_grpo \\| rloo \\| gigpo | `gae` |") != std::string::npos);
  CHECK_MESSAGE(read_text(kSource + "/docs/config.md") == result.output,
                "docs/config.md is out of date: turnrl config --reference > docs/config.md");
  CHECK(run_turnrl("config --help").exit_code == 0);
}
