// `turnrl sft` and `turnrl make-sft-data`: the supervised format stage as two commands (a config's
// `format:` section runs the same code inside `turnrl train`).
#include <cstdio>

#include <spdlog/spdlog.h>

#include "agents/model/compute_threads.h"
#include "agents/model/tokenizer.h"
#include "tools/cli.h"
#include "tools/command.h"
#include "tools/rank_launcher.h"
#include "trainer/dist/distributed.h"
#include "trainer/sft/format_stage.h"
#include "trainer/sft/sft_data.h"
#include "trainer/sft/sft.h"
#include "trainer/config/train_config.h"

namespace turnrl::tools {
int run_sft(int argc, char** argv) {
  CLI::App app{"Supervised fine-tuning on chat transcripts (JSON Lines of {\"messages\": [...]}), loss on the assistant\n"
               "messages only (but those with \"weight\": 0, past turns); writes a Hugging Face folder with sft_metrics.jsonl and sft_loss.svg beside it.\n"
               "Data-parallel: --nproc N runs N ranks here (for a small model, one thread each: --threads 1), each\n"
               "computing every N-th row of each batch; --rank/--world-size/--master joins a run across machines.",
               "turnrl sft"};
  std::vector<std::string> data;
  std::string model, out;
  trainer::SftSettings settings;
  int threads = 2;
  RankOptions rank_options;
  app.add_option("--data", data, "chat transcripts, one JSON object per line (several files: their examples as one set)")
      ->required()->check(CLI::ExistingFile);
  app.add_option("--model", model, "the model folder to start from")->required()->check(CLI::ExistingDirectory);
  app.add_option("--out", out, "output model folder (not --model)")->required();
  std::vector<std::string> overrides;
  app.add_option("--set", overrides, "format.KEY=VALUE: the stepping, as a config's format section declares it (epochs, lr,\n"
                                     "lr_schedule, batch_size; `turnrl config --reference`), e.g. --set format.epochs=4 --set format.lr=3e-3");
  app.add_option("--seed", settings.seed, "shuffle seed")->capture_default_str();
  app.add_option("--device", settings.device, "cpu or cuda")->capture_default_str();
  app.add_option("--threads", threads, "compute threads (of each rank)")->capture_default_str()->check(CLI::PositiveNumber);
  rank_options.add_to(app);
  if (int code = parse_cli(app, argc, argv); code >= 0) return code;
  static_cast<trainer::FineTuning&>(settings) = trainer::TrainConfig::fine_tuning(overrides);
  if (const std::optional<int> code = rank_options.launch(argc, argv)) return *code;
  const std::shared_ptr<trainer::ProcessGroup> ranks = rank_options.join();
  agents::set_compute_threads(threads);
  const trainer::SftReport report = trainer::run_sft(data, model, out, settings, ranks.get());
  if (ranks && ranks->rank() > 0) return 0;
  std::printf("%zu examples, %zu target tokens; loss per epoch:", report.examples, report.target_tokens);
  for (double loss : report.epoch_loss) std::printf(" %.4f", loss);
  std::printf("\nwrote %s\n", out.c_str());
  return 0;
}

int run_make_sft_data(int argc, char** argv) {
  CLI::App app{"Write format data for `turnrl sft`: episodes of a training config's tasks played with random actions\n"
               "(a share of them keyed on the observation) or by the env's scripted expert, each turn one transcript (the prompt exactly as training builds it, then a reply from the template).\n"
               "Seeds default to the top of the config's training block and may never be its evaluation seeds.",
               "turnrl make-sft-data"};
  std::string config_path, out, model;
  std::vector<std::string> overrides;
  uint64_t first_seed = 0;
  app.add_option("--config", config_path, "a training config (tasks, env options, turn settings, format: keys)")->required()->check(CLI::ExistingFile);
  app.add_option("--out", out, "output JSON Lines file")->required();
  app.add_option("--set", overrides, "SECTION.KEY=VALUE: override a key of --config, checked as the file's own; the format keys\n"
                                     "choose the data (`turnrl config --reference`), e.g. --set format.policy=expert --set format.episodes=500");
  auto* seed_option = app.add_option("--first-seed", first_seed, "seed of the first episode (default: top of the training block)");
  app.add_option("--model", model, "model folder whose tokenizer cuts prompts to the token budget (default: model.path)");
  if (int code = parse_cli(app, argc, argv); code >= 0) return code;
  const trainer::TrainConfig config = trainer::TrainConfig::load(config_path, overrides);
  if (model.empty()) model = config.model.path;
  const agents::Tokenizer tokenizer = agents::Tokenizer::load(model);
  trainer::SftDataSpec spec = trainer::format_data_spec(config, model, tokenizer);
  if (seed_option->count() > 0) spec.first_seed = first_seed;
  const uint64_t eval_first = config.run.eval_seed, eval_count = static_cast<uint64_t>(config.run.eval_episodes);
  if (spec.first_seed < eval_first + eval_count && eval_first < spec.first_seed + static_cast<uint64_t>(spec.episodes)) {
    throw std::invalid_argument("--first-seed: seeds " + std::to_string(spec.first_seed) + ".. overlap the config's evaluation seeds " +
                                std::to_string(eval_first) + ".." + std::to_string(eval_first + eval_count - 1));
  }
  const trainer::SftDataCounts counts = trainer::write_sft_data(spec, out);
  std::printf("wrote %zu transcripts (%zu turns played) from %zu of %d episodes (seeds %llu..) to %s\n", counts.transcripts, counts.turns,
              counts.episodes_written, spec.episodes,
              static_cast<unsigned long long>(spec.first_seed), out.c_str());
  return 0;
}

}  // namespace turnrl::tools
