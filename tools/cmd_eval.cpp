// `turnrl eval --config FILE [--repeats K]`: zero-shot sweeps over models x tasks x episodes (x
// repeats) with BALROG's protocol; append-only per-episode JSONL (resumable), summary CSV/Markdown,
// an SVG plot and BALROG's own layout.
// `turnrl eval --run RUN --seeds START:COUNT --out DIR [--sampled]`: a training run's latest model,
// greedy or sampled as in training (BALROG's own default decoding is temperature 1.0), with the
// run's own turn settings, through the trainer's evaluation code path.
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "agents/llm_agent.h"
#include "agents/model/compute_threads.h"
#include "trainer/rollout/policy_agent.h"
#include "trainer/eval/evaluation.h"
#include "trainer/run/run_folder.h"
#include "trainer/config/train_config.h"
#include "tools/cli.h"
#include "tools/command.h"
#include "tools/eval_config.h"
#include "tools/eval_summary.h"
#include "tools/eval_sweep.h"

namespace turnrl::tools {
namespace {

/** START:COUNT with START >= 0 and COUNT > 0. */
std::pair<uint64_t, int> parse_seed_range(const std::string& text) {
  const size_t colon = text.find(':');
  try {
    if (colon == std::string::npos || text.find('-') != std::string::npos) throw std::invalid_argument(text);
    size_t used = 0;
    const uint64_t start = std::stoull(text.substr(0, colon), &used);
    if (used != colon) throw std::invalid_argument(text);
    const int count = std::stoi(text.substr(colon + 1), &used);
    if (used != text.size() - colon - 1 || count <= 0) throw std::invalid_argument(text);
    return {start, count};
  } catch (const std::logic_error&) {
    throw std::invalid_argument("--seeds must be START:COUNT (START >= 0, COUNT > 0), got '" + text + "'");
  }
}

int evaluate_run(const std::string& run_dir, const std::string& seeds, const std::string& out_folder, bool sampled) {
  const auto [first_seed, count] = parse_seed_range(seeds);
  const trainer::TrainConfig config = trainer::TrainConfig::load(trainer::run_config_path(run_dir));
  if (config.run.overlaps_training_seeds(first_seed, static_cast<uint64_t>(count))) {
    throw std::invalid_argument(fmt::format("--seeds {}: overlaps the run's training seeds {}..{}; pick seeds it never saw",
                                            seeds, config.run.first_training_seed(),
                                            config.run.first_training_seed() + trainer::TrainConfig::Run::kTrainingSeedSpan - 1));
  }
  const std::string model_dir = trainer::latest_model(run_dir);
  agents::set_compute_threads(config.model.threads);
  std::unique_ptr<agents::Agent> agent =
      trainer::make_policy_agent(agents::LanguageModel::load(model_dir, config.model.device), config, !sampled, config.run.seed);
  const std::filesystem::path out_dir = out_folder;
  std::filesystem::create_directories(out_dir);
  const std::string decoding = sampled ? fmt::format("sampled (temperature {})", config.sampling.temperature) : "greedy";
  spdlog::info("evaluating {} ({}) on seeds {}..{} of {} task(s)", model_dir, decoding, first_seed, first_seed + count - 1, config.env.ids.size());
  std::ofstream episodes(out_dir / "episodes.jsonl", std::ios::trunc | std::ios::binary);
  std::vector<EpisodeResult> results;
  const trainer::EvaluationSpec spec{config.env.ids, config.env.options, config.turn, first_seed, count, kEvalProgressSeconds};
  const std::vector<trainer::TaskScore> scores = trainer::evaluate(spec, *agent, [&](const trainer::EpisodeLog& log) {
    const int episode = static_cast<int>(log.job.seed - first_seed);
    episodes << episode_record("run", log, episode).dump() << "\n";
    results.push_back({"run", family_of(log.job.env_id), log.job.env_id, log.progression});
  });
  if (!episodes.flush()) throw std::runtime_error("write error on " + (out_dir / "episodes.jsonl").string());
  nlohmann::json summary = trainer::scores_json(scores);
  summary["model"] = model_dir;
  summary["seeds"] = {{"start", first_seed}, {"count", count}};
  summary["decoding"] = decoding;
  write_file(out_dir / "summary.json", summary.dump(2) + "\n");
  const std::vector<SummaryRow> rows = summarize(results);
  write_file(out_dir / "summary.csv", summary_csv(rows));
  write_file(out_dir / "summary.md", summary_markdown(rows));
  write_file(out_dir / "summary.svg", summary_svg(rows));
  for (const trainer::TaskScore& score : scores) {
    std::printf("%-28s %4d episodes  success %.3f  progression %.3f +- %.3f\n", score.task.c_str(), score.episodes, score.success,
                score.progression, summary["tasks"][score.task]["progression_se"].get<double>());
    if (!score.unlock_rates.empty()) std::printf("%-28s Crafter score %.1f%%: %s\n", "", score.crafter_score, trainer::unlock_summary(score).c_str());
  }
  const nlohmann::json& overall = summary["overall"];
  if (scores.size() > 1) {
    std::printf("%-28s %4d episodes  success %.3f  progression %.3f +- %.3f (standard error, clustered by seed)\n", "overall",
                overall["episodes"].get<int>(), overall["success"].get<double>(), overall["progression"].get<double>(),
                overall["progression_se"].get<double>());
  }
  spdlog::info("wrote {}/summary.json", out_dir.string());
  return 0;
}

}  // namespace

int run_eval(int argc, char** argv) {
  CLI::App app{"Evaluation. With --config: a zero-shot sweep (BALROG protocol), models x tasks x episodes,\n"
               "writing <output_dir>/episodes.jsonl, summary.csv, summary.md, summary.svg and balrog/ (rerunning resumes).\n"
               "With --run: a training run's latest model, greedy (or --sampled), with the run's own turn settings, on\n"
               "COUNT seeds from START per task; writes DIR/summary.json beside the usual summary files.",
               "turnrl eval"};
  std::string config_path, run_dir, seeds, run_out;
  std::vector<std::string> overrides;
  auto* config_option = app.add_option("--config", config_path, "sweep YAML (see configs/eval-*.yaml)")->check(CLI::ExistingFile);
  app.add_option("--set", overrides, "KEY=VALUE: override a key of --config (`turnrl config --reference`), e.g. episodes_per_task=3")
      ->needs(config_option);
  auto* run_option = app.add_option("--run", run_dir, "a training run's folder (run.out)")->check(CLI::ExistingDirectory)->excludes(config_option);
  app.add_option("--seeds", seeds, "START:COUNT seeds per task (with --run)")->needs(run_option);
  app.add_option("--out", run_out, "output folder (with --run)")->needs(run_option);
  bool sampled = false;
  app.add_flag("--sampled", sampled, "sample replies with the run's training sampling instead of greedy decoding (with --run)")->needs(run_option);
  int repeats = 0;
  app.add_option("--repeats", repeats, "K: seeds per episode slot, as the config's `repeats` (overrides it)")
      ->check(CLI::PositiveNumber)
      ->needs(config_option);
  if (int code = parse_cli(app, argc, argv); code >= 0) return code;
  if (repeats > 0) overrides.push_back("repeats=" + std::to_string(repeats));
  if (!run_dir.empty()) {
    if (seeds.empty() || run_out.empty()) throw std::invalid_argument("eval --run needs --seeds START:COUNT and --out DIR");
    return evaluate_run(run_dir, seeds, run_out, sampled);
  }
  if (config_path.empty()) throw std::invalid_argument("eval needs --config FILE or --run RUN (see turnrl eval --help)");
  const SweepTally tally = run_sweep(load_eval_config(config_path, overrides));
  std::printf("%s", tally.summary_markdown.c_str());
  return tally.unfinished > 0 ? kExitFailure : 0;  // a rerun plays them
}

}  // namespace turnrl::tools
