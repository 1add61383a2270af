// `turnrl bench serve`: what the prefix cache saves `turnrl serve`. A sweep of BabyAI goto
// (`turnrl eval`'s code, through the HTTP agent) plays against the server in process, without the
// cache and with it, on the same seeds (the replies are equal, so are the prompts), for each model
// shape (random weights) and each history layout: BALROG's window, whose last observation is
// re-labelled each turn, and an append-only transcript (the tiny preset's sweeps take under a
// second, so they run several rounds, alternating which mode goes first). Per case it prints
// `prefix cache speedup X.XXx (bound Y.YYx)`: the uncached sweep's time over the cached one's,
// against Amdahl's bound 1 / (1 - p r) for the uncached run's share p of time in prefill and the
// cached run's share r of prompt tokens reused.
#include <chrono>
#include <cstdio>
#include <filesystem>

#include <unistd.h>

#include <spdlog/spdlog.h>

#include "agents/model/compute_threads.h"
#include "agents/model/language_model.h"
#include "agents/model/model_presets.h"
#include "agents/model/new_model.h"
#include "tools/bench.h"
#include "tools/cli.h"
#include "tools/eval_sweep.h"
#include "tools/serve/chat_server.h"

namespace turnrl::tools {
namespace {

struct ServeBenchOptions {
  std::vector<std::string> presets = {"tiny", "qwen2.5-0.5b"};
  std::vector<std::string> layouts = {"balrog", "transcript"};
  int tiny_episodes = 32, large_episodes = 8;  // in flight at once, one sweep each
  int tiny_rounds = 5;                         // a tiny sweep takes under a second: several, for a steady total
  int turns = 8;                               // turn.max_turns (the tiny preset's context holds a transcript of 8)
  int reply_tokens = 8;                        // a BALROG action and the end of the reply
  std::string tokenizer_dir = "../shared/tokenizers/qwen";
  uint64_t seed = 1;
  int threads = 0;  // the server's compute threads (0: torch's default), as `turnrl serve --threads`
};

struct SweepRun {
  double seconds = 0.0;
  agents::BatcherStats stats;
  size_t episodes = 0;
};

/** The sweep (its model's base_url: the server's it plays against, set there). */
EvalConfig sweep_config(const ServeBenchOptions& options, trainer::TurnLayout layout, int episodes, const std::filesystem::path& dir) {
  EvalConfig config;
  config.output_dir = dir.string();
  config.env.ids = {"babyai/goto"};
  config.episodes_per_task = episodes;
  config.seed = options.seed;
  config.runner.parallel_episodes = episodes;
  config.runner.turn.layout = layout;
  config.runner.turn.max_turns = options.turns;
  EvalModel model;
  model.name = "served";
  model.type = EvalModel::Type::kHttp;
  model.model = "served";
  model.timeout_s = 3600;
  model.concurrency = episodes;
  model.temperature = 1.0;
  model.max_new_tokens = options.reply_tokens;
  config.models = {model};
  return config;
}

SweepRun run_sweep_against_server(std::shared_ptr<agents::LanguageModel> model, const EvalConfig& config, uint64_t cache_mb) {
  serve::ChatServerOptions server_options;
  server_options.port = 0;
  server_options.model_name = "served";
  server_options.max_batch = config.runner.parallel_episodes;
  server_options.prefix_cache_mb = cache_mb;
  serve::BackgroundChatServer serving(std::move(model), server_options);
  EvalConfig against = config;
  against.models.front().base_url = serving.server().base_url();
  SweepRun run;
  const auto start = std::chrono::steady_clock::now();
  run.episodes = run_sweep(against).finished;
  run.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  run.stats = serving.server().stats();
  return run;
}

/** A short sweep first, so the first measured one does not pay for first touches of the weights
 *  and allocations. */
void warm_up(const ServeBenchOptions& options, const std::shared_ptr<agents::LanguageModel>& model, const std::filesystem::path& dir) {
  ServeBenchOptions brief = options;
  brief.turns = 2;
  run_sweep_against_server(model, sweep_config(brief, trainer::TurnLayout::kBalrog, 2, dir), 0);
}

/** Sums a round into the totals (the cache's memory: the last round's). */
void add_round(SweepRun& total, const SweepRun& round) {
  total.seconds += round.seconds;
  total.episodes += round.episodes;
  total.stats.prefill_seconds += round.stats.prefill_seconds;
  agents::PrefixCacheStats& cache = total.stats.prefix_cache;
  const agents::PrefixCacheStats& more = round.stats.prefix_cache;
  cache.lookups += more.lookups;
  cache.hits += more.hits;
  cache.prompt_tokens += more.prompt_tokens;
  cache.reused_tokens += more.reused_tokens;
  cache.bytes = more.bytes;
}

/** One model shape and layout, without and with the cache, `rounds` times in alternating order
 *  (the totals count); prints the case's lines. */
void run_case(const ServeBenchOptions& options, const std::string& preset, const std::shared_ptr<agents::LanguageModel>& model,
              trainer::TurnLayout layout, const std::filesystem::path& dir) {
  const bool tiny = agents::find_preset(preset).word_level;
  const int episodes = tiny ? options.tiny_episodes : options.large_episodes, rounds = tiny ? options.tiny_rounds : 1;
  const std::string name = preset + " " + trainer::enum_name(layout);
  EvalConfig config = sweep_config(options, layout, episodes, dir);
  SweepRun uncached, cached;
  for (int round = 0; round < rounds; ++round) {
    for (const bool with_cache : {round % 2 == 1, round % 2 == 0}) {
      config.output_dir = (dir / (name + (with_cache ? " cached " : " uncached ") + std::to_string(round))).string();
      add_round(with_cache ? cached : uncached,
                run_sweep_against_server(model, config, with_cache ? serve::ChatServerOptions{}.prefix_cache_mb : 0));
    }
  }
  const double prefill_share = uncached.stats.prefill_seconds / uncached.seconds;
  const agents::PrefixCacheStats& cache = cached.stats.prefix_cache;
  const double bound = 1.0 / (1.0 - prefill_share * cache.reused_share());
  const double speedup = uncached.seconds / cached.seconds;
  std::printf("%s: %d round(s) of %d episodes, %llu prompts, %.0f prompt tokens each on average\n", name.c_str(), rounds, episodes,
              static_cast<unsigned long long>(cache.lookups),
              cache.lookups ? static_cast<double>(cache.prompt_tokens) / static_cast<double>(cache.lookups) : 0.0);
  std::printf("  uncached %8.2f s  prefill %5.1f%% of it\n", uncached.seconds, 100.0 * prefill_share);
  std::printf("  cached   %8.2f s  prefill %5.1f%% of it; prompts hit %.1f%%, prompt tokens reused %.1f%%, %.1f MiB cached\n", cached.seconds,
              100.0 * cached.stats.prefill_seconds / cached.seconds, 100.0 * cache.hit_rate(), 100.0 * cache.reused_share(),
              static_cast<double>(cache.bytes) / (1 << 20));
  std::printf("  prefix cache speedup %.2fx (bound %.2fx)  %.2f of the bound\n", speedup, bound, speedup / bound);
  std::fflush(stdout);
  if (uncached.episodes != cached.episodes) spdlog::warn("{}: the two modes finished different numbers of episodes", name);
}

}  // namespace

int bench_serve(int argc, char** argv) {
  CLI::App app{"A BabyAI goto sweep against `turnrl serve` (in process) without and with the prefix cache, per model shape\n"
               "(random weights) and history layout (BALROG's, an append-only transcript). Prints per case\n"
               "`prefix cache speedup X.XXx (bound Y.YYx)`, the bound Amdahl's for the measured prefill share and reuse.",
               "turnrl bench serve"};
  ServeBenchOptions options;
  app.add_option("--presets", options.presets, "model shapes (turnrl new-model --preset)")->capture_default_str();
  app.add_option("--layouts", options.layouts, "history layouts (turn.layout)")
      ->check(CLI::IsMember(trainer::EnumNames<trainer::TurnLayout>::names()))
      ->capture_default_str();
  app.add_option("--tiny-episodes", options.tiny_episodes, "episodes in flight with the tiny presets")->check(CLI::PositiveNumber)->capture_default_str();
  app.add_option("--large-episodes", options.large_episodes, "episodes in flight with the other presets")->check(CLI::PositiveNumber)->capture_default_str();
  app.add_option("--tiny-rounds", options.tiny_rounds, "rounds (each mode once, alternating order) with the tiny presets")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--turns", options.turns, "turns per episode at most")->check(CLI::PositiveNumber)->capture_default_str();
  app.add_option("--reply-tokens", options.reply_tokens, "reply length limit")->check(CLI::PositiveNumber)->capture_default_str();
  app.add_option("--tokenizer", options.tokenizer_dir, "tokenizer folder for presets without their own (the Qwen tokenizer)")
      ->capture_default_str();
  app.add_option("--seed", options.seed, "first episode seed")->capture_default_str();
  app.add_option("--threads", options.threads, "CPU compute threads of the server (0: torch's default), as turnrl serve --threads")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  if (int code = parse_cli(app, argc, argv); code >= 0) return code;
  if (options.threads > 0) agents::set_compute_threads(options.threads);

  const std::filesystem::path dir = std::filesystem::temp_directory_path() / ("turnrl_bench_serve_" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  const spdlog::level::level_enum level = spdlog::get_level();
  spdlog::set_level(spdlog::level::warn);  // a line per episode would bury the figures
  std::printf("BabyAI goto sweeps against turnrl serve: at most %d turns, replies of at most %d tokens, sampled at temperature 1\n",
              options.turns, options.reply_tokens);
  std::fflush(stdout);
  try {
    for (const std::string& preset : options.presets) {
      const std::string model_dir = (dir / preset).string();
      agents::write_new_model(preset, model_dir, options.seed, agents::find_preset(preset).word_level ? "" : options.tokenizer_dir);
      const std::shared_ptr<agents::LanguageModel> model = agents::LanguageModel::load(model_dir);
      warm_up(options, model, dir / (preset + " warm-up"));
      for (const std::string& layout : options.layouts) run_case(options, preset, model, *trainer::parse_enum<trainer::TurnLayout>(layout), dir);
    }
  } catch (...) {
    spdlog::set_level(level);
    std::filesystem::remove_all(dir);
    throw;
  }
  spdlog::set_level(level);
  std::filesystem::remove_all(dir);
  return 0;
}

}  // namespace turnrl::tools
