// `turnrl eval --config FILE`: zero-shot sweeps over models x tasks x episodes with BALROG's
// protocol; append-only per-episode JSONL (resumable), summary CSV/Markdown and an SVG plot.
// `turnrl eval --run RUN --seeds START:COUNT --out DIR [--sampled]`: a training run's latest model,
// greedy or sampled as in training (BALROG's own default decoding is temperature 1.0), with the
// run's own turn settings, through the trainer's evaluation code path.
#include <filesystem>
#include <fstream>
#include <iostream>
#include <set>
#include <sstream>
#include <tuple>

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "agents/http_agent.h"
#include "agents/human_agent.h"
#include "agents/llm_agent.h"
#include "agents/model/compute_threads.h"
#include "agents/expert_agent.h"
#include "agents/random_agent.h"
#include "envs/registry.h"
#include "trainer/rollout/policy_agent.h"
#include "trainer/eval/evaluation.h"
#include "trainer/run/run_folder.h"
#include "trainer/config/train_config.h"
#include "tools/cli.h"
#include "tools/command.h"
#include "tools/eval_config.h"
#include "tools/eval_summary.h"

namespace turnrl::tools {
namespace {

constexpr double kProgressSeconds = 5.0;  // between progress lines (episodes done, turns/s, ETA)

std::string family_of(const std::string& env_id) { return env_id.substr(0, env_id.find('/')); }

std::unique_ptr<agents::Agent> make_agent(const EvalModel& model) {
  using Type = EvalModel::Type;
  if (model.type == Type::kRandom) return std::make_unique<agents::RandomAgent>();
  // The env's scripted expert (envs/expert.h): the ceiling a format stage's demonstrations set.
  if (model.type == Type::kExpert) return std::make_unique<agents::ExpertAgent>("{action}", model.expert_sight);
  // A person answers each prompt on the terminal: the BALROG protocol with a human baseline.
  if (model.type == Type::kHuman) return std::make_unique<agents::HumanAgent>(std::cin, std::cout);
  if (model.type == Type::kHttp) {
    agents::HttpAgentConfig http;
    http.base_url = model.base_url;
    http.model = model.model;
    http.api_key_env = model.api_key_env;
    http.timeout_s = model.timeout_s;
    http.retries = model.retries;
    http.concurrency = model.concurrency;
    http.temperature = model.temperature;
    http.max_tokens = model.max_new_tokens;
    return std::make_unique<agents::HttpAgent>(http);
  }
  agents::SamplingParams params;
  params.temperature = static_cast<float>(model.temperature);
  params.greedy = model.temperature == 0.0;
  params.max_new_tokens = model.max_new_tokens;
  std::shared_ptr<agents::LanguageModel> language_model = agents::LanguageModel::load(model.path, model.device);
  return std::make_unique<agents::LlmAgent>(std::move(language_model), params, model.name);
}

using EpisodeKey = std::tuple<std::string, std::string, int>;  // model, task, episode

/** Reads finished episodes; drops a torn last line left by an interrupted run. */
std::vector<nlohmann::json> read_finished(const std::string& path) {
  std::vector<nlohmann::json> records;
  std::ifstream in(path, std::ios::binary);
  if (!in) return records;
  std::string content((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  in.close();
  const size_t complete = content.rfind('\n') == std::string::npos ? 0 : content.rfind('\n') + 1;
  if (complete < content.size()) {
    spdlog::warn("{}: dropping an incomplete last line ({} bytes)", path, content.size() - complete);
    std::filesystem::resize_file(path, complete);
  }
  std::istringstream lines(content.substr(0, complete));
  std::string line;
  size_t number = 0;
  while (std::getline(lines, line)) {
    ++number;
    auto record = nlohmann::json::parse(line, nullptr, false);
    if (record.is_discarded() || !record.is_object()) {
      throw std::runtime_error(path + ":" + std::to_string(number) + ": not a JSON object; move the file away to restart");
    }
    records.push_back(std::move(record));
  }
  return records;
}

nlohmann::json episode_record(const std::string& model, const trainer::EpisodeLog& log, int episode) {
  nlohmann::json turns = nlohmann::json::array();
  for (const auto& turn : log.turns) {
    nlohmann::json prompt = nlohmann::json::array();
    for (const auto& message : turn.prompt) prompt.push_back({{"role", message.role}, {"content", message.content}});
    nlohmann::json record = {{"prompt", std::move(prompt)}, {"reply", turn.reply}, {"action", turn.action}, {"valid", turn.valid},
                             {"reward", turn.reward}};
    if (!turn.error.empty()) record["error"] = turn.error;  // the agent gave no reply: default action, episode over
    turns.push_back(std::move(record));
  }
  return {{"model", model},
          {"env", family_of(log.job.env_id)},
          {"task", log.job.env_id},
          {"episode", episode},
          {"seed", log.job.seed},
          {"steps", log.turns.size()},
          {"progression", log.progression},
          {"achievements", log.achievements},
          {"return", log.episode_return},
          {"terminated", log.terminated},
          {"truncated", log.truncated},
          {"turns", std::move(turns)}};
}

void write_file(const std::filesystem::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
  if (!out) throw std::runtime_error("cannot write " + path.string());
}

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
  const trainer::EvaluationSpec spec{config.env.ids, config.env.options, config.turn, first_seed, count, kProgressSeconds};
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
               "writing <output_dir>/episodes.jsonl, summary.csv, summary.md and summary.svg (rerunning resumes).\n"
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
  if (int code = parse_cli(app, argc, argv); code >= 0) return code;
  if (!run_dir.empty()) {
    if (seeds.empty() || run_out.empty()) throw std::invalid_argument("eval --run needs --seeds START:COUNT and --out DIR");
    return evaluate_run(run_dir, seeds, run_out, sampled);
  }
  if (config_path.empty()) throw std::invalid_argument("eval needs --config FILE or --run RUN (see turnrl eval --help)");
  const EvalConfig config = load_eval_config(config_path, overrides);
  const std::filesystem::path out_dir = config.output_dir;
  std::filesystem::create_directories(out_dir);
  const std::string jsonl = (out_dir / "episodes.jsonl").string();

  std::vector<EpisodeResult> results;
  std::set<EpisodeKey> finished;
  for (const auto& record : read_finished(jsonl)) {
    try {
      finished.emplace(record.at("model").get<std::string>(), record.at("task").get<std::string>(), record.at("episode").get<int>());
      results.push_back({record.at("model"), record.at("env"), record.at("task"), record.at("progression")});
    } catch (const nlohmann::json::exception& error) {
      throw std::runtime_error(jsonl + ": a record lacks a field: " + error.what());
    }
  }
  const size_t total = config.models.size() * config.env.ids.size() * static_cast<size_t>(config.episodes_per_task);
  size_t done = 0;
  for (const auto& model : config.models) {
    for (const auto& task : config.env.ids) {
      for (int e = 0; e < config.episodes_per_task; ++e) done += finished.count({model.name, task, e});
    }
  }
  if (done > 0) spdlog::info("resuming: {} of {} episodes already in {}", done, total, jsonl);

  std::ofstream out(jsonl, std::ios::app | std::ios::binary);
  if (!out) throw std::runtime_error("cannot append to " + jsonl);
  for (const auto& model : config.models) {
    std::vector<trainer::EpisodeJob> jobs;
    std::vector<int> episode_of;
    for (const auto& task : config.env.ids) {
      for (int e = 0; e < config.episodes_per_task; ++e) {
        if (finished.count({model.name, task, e})) continue;
        // Reproducible seeds per (sweep seed, episode index), the same for every model and task.
        jobs.push_back({task, config.seed + static_cast<uint64_t>(e), jobs.size()});
        episode_of.push_back(e);
      }
    }
    if (jobs.empty()) continue;
    spdlog::info("model {} ({}): {} episodes", model.name, trainer::enum_name(model.type), jobs.size());
    std::unique_ptr<agents::Agent> agent = make_agent(model);
    auto make_env = [&](const std::string& id) {
      const auto options = config.env_options.find(family_of(id));
      return envs::make_env(id, options == config.env_options.end() ? nlohmann::json::object() : options->second);
    };
    trainer::EpisodeRunnerConfig runner = config.runner;
    runner.progress_s = model.type == EvalModel::Type::kHuman ? 0.0 : kProgressSeconds;  // no lines between a person's prompts
    runner.progress_label = model.name;
    trainer::run_episodes(jobs, make_env, *agent, runner, [&](trainer::EpisodeLog&& log) {
      const int episode = episode_of[log.job.key];
      out << episode_record(model.name, log, episode).dump() << "\n";
      out.flush();
      results.push_back({model.name, family_of(log.job.env_id), log.job.env_id, log.progression});
      ++done;
      spdlog::info("[{}/{}] {} {} episode {}: {} turns, progression {:.3f}", done, total, model.name, log.job.env_id, episode,
                   log.turns.size(), log.progression);
    });
  }
  if (!out) throw std::runtime_error("write error on " + jsonl);

  const std::vector<SummaryRow> rows = summarize(results);
  write_file(out_dir / "summary.csv", summary_csv(rows));
  write_file(out_dir / "summary.md", summary_markdown(rows));
  write_file(out_dir / "summary.svg", summary_svg(rows));
  std::printf("%s", summary_markdown(rows).c_str());
  spdlog::info("wrote {}/summary.{{csv,md,svg}}", out_dir.string());
  return 0;
}

}  // namespace turnrl::tools
