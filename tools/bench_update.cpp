// `turnrl bench update --config C`: the PPO update's speed on the config's own prompts. One
// collection of the config (its model, or a new model of its preset where the folder is not made
// yet), then several updates on it, each timed as the training loop's `seconds.update`; printed as
// seconds per collected turn, non-padding token positions per second and the share of the machine's
// float32 matmul peak. With --reference-bin, another build's `turnrl train` runs a few iterations of
// the same config on the same model and seeds (its first collection is this one), and the line
// `update speedup X.XXx` compares the two side by side.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include <unistd.h>

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>
#include <yaml-cpp/yaml.h>

#include "agents/model/model_config.h"
#include "agents/model/new_model.h"
#include "tools/bench.h"
#include "tools/bench_timing.h"
#include "tools/cli.h"
#include "trainer/config/config_reader.h"
#include "trainer/run/ppo_trainer.h"

namespace turnrl::tools {
namespace {

struct Options {
  std::string config_path, reference_bin;
  std::vector<std::string> overrides;
  int updates = 3, reference_iterations = 3;
};

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const size_t n = values.size();
  return n % 2 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
}

/** The model the update trains: the config's initial model, or a new one of its preset in `work`. */
std::string update_model(const trainer::TrainConfig& config, const std::string& work) {
  const std::string& model = config.initial_model();
  if (std::filesystem::exists(model + "/config.json")) return model;
  if (config.model.preset.empty()) {
    throw std::invalid_argument("'" + model + "' holds no model and model.preset is not set: nothing to measure the update on");
  }
  spdlog::info("{} holds no model yet: measuring on a new '{}' model", model, config.model.preset);
  const std::optional<double> range = config.model.initializer_range > 0 ? std::optional(config.model.initializer_range) : std::nullopt;
  agents::write_new_model(config.model.preset, work + "/model", config.run.seed, "", range);
  return work + "/model";
}

/** The models an update runs each turn through: the actor, and the critic where the estimator has one. */
double model_passes(const trainer::TrainConfig& config) { return config.ppo.estimator == trainer::Estimator::kGae ? 2.0 : 1.0; }

/** Matmul FLOPs of one update as the model computes it: per epoch, every turn through the actor
 *  and the critic, forward and backward (twice the forward), attention causal. The last layer runs
 *  only the response positions (and the one before them) past its key and value projections; the
 *  actor's output head runs at the response positions. */
double update_flops(const trainer::TrainConfig& config, const agents::ModelConfig& model, const trainer::UpdateTimings& t) {
  const double width = model.num_attention_heads * model.head_dim(), kv_weights = 2.0 * model.hidden_size * model.num_key_value_heads * model.head_dim();
  const double tokens = t.prompt_tokens + t.response_tokens, queries = t.response_tokens + static_cast<double>(t.turns);
  const double mean_length = tokens / static_cast<double>(t.turns);
  const double full_layer = 2.0 * tokens * layer_weights(model) + 2.0 * tokens * mean_length * width;
  const double last_layer = 2.0 * tokens * kv_weights + 2.0 * queries * (layer_weights(model) - kv_weights) + 4.0 * queries * mean_length * width;
  const double trunk = (model.num_hidden_layers - 1) * full_layer + last_layer;
  const double head = 2.0 * t.response_tokens * model.hidden_size * model.vocab_size;
  return 3.0 * config.ppo.epochs * (model_passes(config) * trunk + head);
}

/** The reference build's `seconds.update` per collected turn over its first iterations (median). */
std::optional<double> reference_seconds_per_turn(const Options& options, const std::string& model, const std::string& work) {
  YAML::Node node = trainer::load_yaml_file(options.config_path);
  trainer::apply_overrides(node, options.overrides);
  node.remove("format");
  node["model"]["path"] = model;
  node["ppo"]["critic_warmup_iterations"] = 0;
  YAML::Node run = node["run"];
  run["out"] = work + "/reference";
  run["iterations"] = options.reference_iterations;
  for (const char* key : {"eval_every", "checkpoint_every"}) run[key] = 1000000;
  run["eval_episodes"] = 1;
  run["final_eval_episodes"] = 0;
  run["keep_best"] = false;
  const std::string config = work + "/reference.yaml";
  std::ofstream(config) << YAML::Dump(node) << "\n";
  spdlog::info("reference: {} train, {} iterations", options.reference_bin, options.reference_iterations);
  if (!command_output(options.reference_bin + " train --config " + config + " 2>&1")) return std::nullopt;
  std::vector<double> per_turn;
  std::ifstream metrics(work + "/reference/metrics.jsonl");
  for (std::string line; std::getline(metrics, line);) {
    const nlohmann::json m = nlohmann::json::parse(line);
    if (m.value("type", "") == "train") per_turn.push_back(m.at("seconds").at("update").get<double>() / m.at("turns").get<double>());
  }
  if (per_turn.empty()) return std::nullopt;
  return median(per_turn);
}

int run(const Options& options) {
  trainer::TrainConfig config = trainer::TrainConfig::load(options.config_path, options.overrides);
  const std::filesystem::path work = std::filesystem::temp_directory_path() / ("turnrl_bench_update_" + std::to_string(getpid()));
  std::filesystem::create_directories(work);
  const std::string model = update_model(config, work.string());
  config.format = {};
  config.model.path = model;
  config.run.out = (work / "run").string();
  trainer::PpoTrainer trainer(config, "");
  const trainer::UpdateTimings t = trainer.time_updates(options.updates);
  const double seconds = median(t.seconds), per_turn = seconds / static_cast<double>(t.turns);
  const double passes = model_passes(config);
  const double positions = config.ppo.epochs * passes * (t.prompt_tokens + t.response_tokens);
  const double gflops = update_flops(config, agents::ModelConfig::load(model + "/config.json"), t) / seconds / 1e9;
  const PeakProduct peak_product(1024);
  const double peak = peak_product.gflops(best_seconds(peak_product, 3, kTimingBudgetSeconds / 2));
  std::printf("update of %s: %zu turns, %.0f prompt + %.0f response tokens; %d epochs, mini-batches of %d, %s\n",
              options.config_path.c_str(), t.turns, t.prompt_tokens, t.response_tokens, config.ppo.epochs, config.ppo.minibatch,
              passes > 1 ? "actor and critic" : "actor only");
  std::printf("this build: %.2f s per update (median of %d) = %.5f s per collected turn | %.0f token positions/s | %.1f GFLOP/s = %.1f%% of peak "
              "(float32 1024 matmul: %.1f GFLOP/s)\n",
              seconds, options.updates, per_turn, positions / seconds, gflops, 100.0 * gflops / peak, peak);
  nlohmann::json report = {{"bench", "update"}, {"turns", t.turns}, {"update_seconds", seconds}, {"seconds_per_turn", per_turn},
                           {"positions_per_s", positions / seconds}, {"gflops", gflops}, {"peak_gflops", peak}};
  std::optional<double> reference;
  if (!options.reference_bin.empty()) reference = reference_seconds_per_turn(options, model, work.string());
  std::filesystem::remove_all(work);
  if (!options.reference_bin.empty() && !reference) {
    spdlog::error("the reference run gave no update timings");
    return 1;
  }
  if (reference) {
    std::printf("reference:  %.5f s per collected turn (median of iterations 1-%d of %s train)\nupdate speedup %.2fx\n", *reference,
                options.reference_iterations, options.reference_bin.c_str(), *reference / per_turn);
    report["reference_seconds_per_turn"] = *reference;
    report["speedup"] = *reference / per_turn;
  }
  std::printf("%s\n", report.dump().c_str());
  return 0;
}

}  // namespace

int bench_update(int argc, char** argv) {
  CLI::App app{"The PPO update's speed on a training config's own prompts: one collection, then --updates updates on it;\n"
               "seconds per collected turn, token positions/s and the share of the float32 matmul peak. With\n"
               "--reference-bin, another build's `turnrl train` runs the same config's first iterations side by side.",
               "turnrl bench update"};
  Options options;
  app.add_option("--config", options.config_path, "a training config")->required()->check(CLI::ExistingFile);
  app.add_option("--set", options.overrides, "SECTION.KEY=VALUE: override a key of --config (as `turnrl train --set`)");
  app.add_option("--updates", options.updates, "updates timed on the collection")->capture_default_str()->check(CLI::PositiveNumber);
  app.add_option("--reference-bin", options.reference_bin, "another build's turnrl (e.g. of the commit to compare with)")
      ->check(CLI::ExistingFile);
  app.add_option("--reference-iterations", options.reference_iterations, "iterations the reference trains")
      ->capture_default_str()->check(CLI::PositiveNumber);
  if (int code = parse_cli(app, argc, argv); code >= 0) return code;
  return run(options);
}

}  // namespace turnrl::tools
