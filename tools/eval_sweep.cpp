#include "tools/eval_sweep.h"

#include <fstream>
#include <iostream>
#include <set>
#include <sstream>
#include <tuple>

#include <spdlog/spdlog.h>

#include "agents/expert_agent.h"
#include "agents/http_agent.h"
#include "agents/human_agent.h"
#include "agents/llm_agent.h"
#include "agents/random_agent.h"
#include "envs/registry.h"
#include "tools/balrog_layout.h"
#include "tools/eval_summary.h"

namespace turnrl::tools {
namespace {

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
    http.backoff_s = model.backoff_s;
    http.concurrency = model.concurrency;
    http.requests_per_minute = model.requests_per_minute;
    http.tokens_per_minute = model.tokens_per_minute;
    http.temperature = model.temperature;
    http.max_tokens = model.max_new_tokens;
    return std::make_unique<agents::HttpAgent>(http);
  }
  agents::SamplingParams params;
  params.temperature = static_cast<float>(model.temperature);
  params.greedy = model.temperature == 0.0;
  params.max_new_tokens = model.max_new_tokens;
  std::shared_ptr<agents::LanguageModel> language_model = agents::LanguageModel::load(model.path, model.device);
  constexpr int kMaxBatch = 64;
  return std::make_unique<agents::LlmAgent>(std::move(language_model), params, model.name, kMaxBatch,
                                            static_cast<uint64_t>(model.prefix_cache_mb) << 20);
}

using EpisodeKey = std::tuple<std::string, std::string, int, int>;  // model, task, episode, repeat

/** Reads the records; drops a torn last line left by an interrupted run. */
std::vector<nlohmann::json> read_records(const std::string& path) {
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

/** An episode's result for the summaries, from its record (files before token counts: 0). */
EpisodeResult result_of(const nlohmann::json& record) {
  return {record.at("model"), record.at("env"), record.at("task"), record.at("progression"), record.value("prompt_tokens", size_t{0}),
          record.value("completion_tokens", size_t{0}), record.value("repeat", 0), record.at("steps")};
}

/** The finished episodes of the file: their keys, and their results for the summaries; BALROG's
 *  files of those an older sweep wrote none for. */
void read_finished(const std::string& jsonl, const BalrogLayout& balrog, std::set<EpisodeKey>& finished,
                   std::vector<EpisodeResult>& results) {
  for (const auto& record : read_records(jsonl)) {
    if (record.contains("error")) continue;  // ended by an agent error: to play again
    try {
      finished.emplace(record.at("model").get<std::string>(), record.at("task").get<std::string>(), record.at("episode").get<int>(),
                       record.value("repeat", 0));
      results.push_back(result_of(record));
      balrog.write_episode(record, false);
    } catch (const nlohmann::json::exception& error) {
      throw std::runtime_error(jsonl + ": a record lacks a field: " + error.what());
    }
  }
}

/** The agent error that ended the episode, or "". */
std::string episode_error(const trainer::EpisodeLog& log) { return log.turns.empty() ? "" : log.turns.back().error; }

}  // namespace

std::string family_of(const std::string& env_id) { return env_id.substr(0, env_id.find('/')); }

nlohmann::json episode_record(const std::string& model, const trainer::EpisodeLog& log, int episode, int repeat) {
  nlohmann::json turns = nlohmann::json::array();
  size_t prompt_tokens = 0, completion_tokens = 0;
  for (const auto& turn : log.turns) {
    nlohmann::json prompt = nlohmann::json::array();
    for (const auto& message : turn.prompt) prompt.push_back({{"role", message.role}, {"content", message.content}});
    nlohmann::json record = {{"prompt", std::move(prompt)}, {"reply", turn.reply}, {"action", turn.action}, {"valid", turn.valid},
                             {"reward", turn.reward}, {"prompt_tokens", turn.prompt_tokens}, {"completion_tokens", turn.completion_tokens}};
    prompt_tokens += turn.prompt_tokens;
    completion_tokens += turn.completion_tokens;
    if (!turn.error.empty()) record["error"] = turn.error;  // the agent gave no reply: default action, episode over
    turns.push_back(std::move(record));
  }
  nlohmann::json record = {{"model", model},
                           {"env", family_of(log.job.env_id)},
                           {"task", log.job.env_id},
                           {"episode", episode},
                           {"repeat", repeat},
                           {"seed", log.job.seed},
                           {"steps", log.turns.size()},
                           {"progression", log.progression},
                           {"achievements", log.achievements},
                           {"return", log.episode_return},
                           {"terminated", log.terminated},
                           {"truncated", log.truncated},
                           {"prompt_tokens", prompt_tokens},
                           {"completion_tokens", completion_tokens},
                           {"turns", std::move(turns)}};
  if (const std::string error = episode_error(log); !error.empty()) record["error"] = error;
  return record;
}

void write_file(const std::filesystem::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
  if (!out) throw std::runtime_error("cannot write " + path.string());
}

SweepTally run_sweep(const EvalConfig& config) {
  const std::filesystem::path out_dir = config.output_dir;
  std::filesystem::create_directories(out_dir);
  const std::string jsonl = (out_dir / "episodes.jsonl").string();
  std::set<EpisodeKey> finished;
  std::vector<EpisodeResult> results;
  const BalrogLayout balrog(config);
  read_finished(jsonl, balrog, finished, results);
  const size_t total =
      config.models.size() * config.env.ids.size() * static_cast<size_t>(config.episodes_per_task) * static_cast<size_t>(config.repeats);
  size_t done = results.size();
  if (done > 0) spdlog::info("resuming: {} of {} episodes already finished in {}", done, total, jsonl);

  SweepTally tally;
  std::ofstream out(jsonl, std::ios::app | std::ios::binary);
  if (!out) throw std::runtime_error("cannot append to " + jsonl);
  for (const auto& model : config.models) {
    std::vector<trainer::EpisodeJob> jobs;
    std::vector<std::pair<int, int>> slot_of;  // episode, repeat
    for (int r = 0; r < config.repeats; ++r) {
      for (const auto& task : config.env.ids) {
        for (int e = 0; e < config.episodes_per_task; ++e) {
          if (finished.count({model.name, task, e, r})) continue;
          // Reproducible seeds per (sweep seed, slot, repeat), the same for every model and task;
          // each repeat a block of its own, so adding repeats keeps the seeds played before.
          jobs.push_back({task, config.seed + static_cast<uint64_t>(r) * config.episodes_per_task + e, jobs.size()});
          slot_of.emplace_back(e, r);
        }
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
    runner.progress_s = model.type == EvalModel::Type::kHuman ? 0.0 : kEvalProgressSeconds;  // no lines between a person's prompts
    runner.progress_label = model.name;
    trainer::run_episodes(jobs, make_env, *agent, runner, [&](trainer::EpisodeLog&& log) {
      const auto [episode, repeat] = slot_of[log.job.key];
      const nlohmann::json record = episode_record(model.name, log, episode, repeat);
      out << record.dump() << "\n";
      out.flush();
      ++tally.played;
      if (!episode_error(log).empty()) {
        ++tally.unfinished;
        return;
      }
      ++tally.finished;
      results.push_back(result_of(record));
      balrog.write_episode(record, true);
      ++done;
      spdlog::info("[{}/{}] {} {} episode {} repeat {}: {} turns, progression {:.3f}", done, total, model.name, log.job.env_id, episode,
                   repeat, log.turns.size(), log.progression);
    });
  }
  if (!out) throw std::runtime_error("write error on " + jsonl);
  if (tally.unfinished > 0) {
    spdlog::warn("{} episodes ended by agent errors are recorded unfinished in {}; run the sweep again to play them", tally.unfinished,
                 jsonl);
  }

  ModelPrices prices;
  for (const auto& model : config.models) prices[model.name] = {model.price_prompt, model.price_completion};
  const std::vector<SummaryRow> rows = summarize(results, prices);
  write_file(out_dir / "summary.csv", summary_csv(rows));
  write_file(out_dir / "summary.md", summary_markdown(rows));
  write_file(out_dir / "summary.svg", summary_svg(rows));
  balrog.write_summaries(results);
  tally.summary_markdown = summary_markdown(rows);
  spdlog::info("wrote {}/summary.{{csv,md,svg}} and BALROG's layout in {}", out_dir.string(), (out_dir / "balrog").string());
  return tally;
}

}  // namespace turnrl::tools
