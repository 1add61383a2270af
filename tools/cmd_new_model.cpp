#include <cstdio>
#include <optional>

#include "agents/model/model_presets.h"
#include "agents/model/new_model.h"
#include "tools/cli.h"
#include "tools/command.h"

namespace turnrl::tools {

int run_new_model(int argc, char** argv) {
  CLI::App app{"Write a randomly initialised model folder (config.json, model.safetensors, tokenizer)", "turnrl new-model"};
  std::string preset = "tiny", out, tokenizer;
  uint64_t seed = 0;
  std::optional<double> initializer_range;
  app.add_option("--preset", preset, "the model's shape")->check(CLI::IsMember(agents::preset_names()))->capture_default_str();
  app.add_option("--out", out, "output folder")->required();
  app.add_option("--seed", seed, "initialisation seed")->capture_default_str();
  app.add_option("--initializer-range", initializer_range,
                 "standard deviation of the initial weights (default: the preset's, 0.02; near 1/sqrt(hidden size) a "
                 "64-wide model's attention leaves its uniform start sooner: docs/results)")
      ->check(CLI::PositiveNumber);
  app.add_option("--tokenizer", tokenizer, "copy tokenizer.json/tokenizer_config.json from this folder")->check(CLI::ExistingDirectory);
  if (int code = parse_cli(app, argc, argv); code >= 0) return code;
  agents::write_new_model(preset, out, seed, tokenizer, initializer_range);
  std::printf("wrote %s (preset %s, seed %llu)\n", out.c_str(), preset.c_str(), static_cast<unsigned long long>(seed));
  return 0;
}

}  // namespace turnrl::tools
