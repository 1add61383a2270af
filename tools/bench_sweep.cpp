// `turnrl bench sweep`: an evaluation sweep against a hosted API's traffic, per-episode
// asynchronous against lock-step. A BALROG-layout sweep of BabyAI goto (`turnrl eval --config`'s
// code, tools/eval_sweep.h) plays against the loopback stub with log-normal latencies, 429s with a
// Retry-After and 5xx (tools/serve/hosted_api_traffic.h), all episodes in flight, no client time
// budget. Both modes play the same seeds and meet the same draws; lock-step waits each turn for the
// slowest reply of the turn. Episodes an agent error ended are played again by a rerun, which must
// play exactly them. Ends with `sweep async speedup X.XXx` (lock-step time / asynchronous time).
#include <chrono>
#include <cstdio>
#include <filesystem>

#include <unistd.h>

#include <spdlog/spdlog.h>

#include "tools/bench.h"
#include "tools/cli.h"
#include "tools/eval_sweep.h"
#include "tools/serve/hosted_api_traffic.h"

namespace turnrl::tools {
namespace {

struct SweepBenchOptions {
  serve::HostedApiProfile traffic;
  int episodes = 256, in_flight = 256, max_turns = 8, retries = 3;
};

struct ModeRun {
  double seconds = 0.0;  // of the first pass
  SweepTally first, rerun;
  int requests = 0, rate_limited = 0, server_errors = 0;  // both passes
};

/** A BabyAI action named from the request's seed: a model answering at random, the same in both modes. */
std::string action_reply(uint64_t seed) {
  static const char* kActions[] = {"turn left", "turn right", "go forward", "pick up", "drop", "toggle"};
  return kActions[(seed * 0x9E3779B97F4A7C15ULL >> 40) % 6];
}

EvalConfig sweep_config(const SweepBenchOptions& options, const std::string& base_url, const std::filesystem::path& dir, bool lock_step) {
  EvalConfig config;
  config.output_dir = (dir / (lock_step ? "lock-step" : "async")).string();
  config.env.ids = {"babyai/goto"};
  config.episodes_per_task = options.episodes;
  config.seed = options.traffic.seed;
  config.runner.parallel_episodes = options.in_flight;
  config.runner.lock_step = lock_step;
  config.runner.turn.max_turns = options.max_turns;  // the layout and the rest: BALROG's defaults
  EvalModel model;
  model.name = "stub";
  model.type = EvalModel::Type::kHttp;
  model.base_url = base_url;
  model.model = "stub";
  model.timeout_s = 3600;  // no client budget: every reply is waited for
  model.retries = options.retries;
  model.backoff_s = 0.5 * options.traffic.time_scale;
  model.concurrency = options.in_flight;
  model.max_new_tokens = 8192;  // BALROG's
  config.models = {model};
  return config;
}

ModeRun run_mode(const SweepBenchOptions& options, const std::filesystem::path& dir, bool lock_step) {
  serve::HostedApiTraffic traffic(options.traffic);
  serve::OpenAiStubServer server([&](int, const nlohmann::json& request) {
    const auto seed = static_cast<uint64_t>(request.value("seed", int64_t{0}));
    return traffic.answer(seed, action_reply(seed));
  });
  const EvalConfig config = sweep_config(options, server.base_url(), dir, lock_step);
  ModeRun run;
  const auto start = std::chrono::steady_clock::now();
  run.first = run_sweep(config);
  run.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (run.first.unfinished > 0) run.rerun = run_sweep(config);
  run.requests = server.requests();
  run.rate_limited = traffic.rate_limited();
  run.server_errors = traffic.server_errors();
  return run;
}

void report(const char* mode, const ModeRun& run) {
  std::printf("  %-9s %8.2f s  %zu finished  %zu unfinished  %d requests  %d 429s  %d 5xx\n", mode, run.seconds, run.first.finished,
              run.first.unfinished, run.requests, run.rate_limited, run.server_errors);
  if (run.first.unfinished > 0) {
    std::printf("  %-9s rerun played %zu episodes (exactly the unfinished: %s), %zu finished, %zu unfinished\n", "", run.rerun.played,
                run.rerun.played == run.first.unfinished ? "yes" : "NO", run.rerun.finished, run.rerun.unfinished);
  }
  std::fflush(stdout);
}

}  // namespace

int bench_sweep(int argc, char** argv) {
  CLI::App app{"A BALROG-layout sweep of BabyAI goto against a loopback stub with a hosted API's traffic (log-normal\n"
               "latencies, 429s with Retry-After, 5xx), per-episode asynchronous against lock-step on the same seeds.\n"
               "Ends with `sweep async speedup X.XXx`.",
               "turnrl bench sweep"};
  SweepBenchOptions options;
  options.traffic.time_scale = 0.1;
  serve::HostedApiProfile& traffic = options.traffic;
  app.add_option("--median-ms", traffic.median_ms, "the stub's median latency")->check(CLI::NonNegativeNumber)->capture_default_str();
  app.add_option("--sigma", traffic.sigma, "sigma of the log-normal latency")->check(CLI::NonNegativeNumber)->capture_default_str();
  app.add_option("--rate-429", traffic.rate_429, "share of attempts refused with 429 and Retry-After: 1")
      ->check(CLI::Range(0.0, 1.0))
      ->capture_default_str();
  app.add_option("--rate-5xx", traffic.rate_5xx, "share of attempts failed with 503")->check(CLI::Range(0.0, 1.0))->capture_default_str();
  app.add_option("--time-scale", traffic.time_scale, "multiplies every latency, Retry-After and backoff (the ratio does not depend on it)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  app.add_option("--seed", traffic.seed, "first episode seed, and the stub's draws")->capture_default_str();
  app.add_option("--episodes", options.episodes, "episodes of the sweep")->check(CLI::PositiveNumber)->capture_default_str();
  app.add_option("--in-flight", options.in_flight, "episodes running at once")->check(CLI::PositiveNumber)->capture_default_str();
  app.add_option("--max-turns", options.max_turns, "turn.max_turns")->check(CLI::PositiveNumber)->capture_default_str();
  app.add_option("--retries", options.retries, "the HTTP agent's retries of a failed request")->check(CLI::NonNegativeNumber)->capture_default_str();
  if (int code = parse_cli(app, argc, argv); code >= 0) return code;
  serve::HostedApiTraffic check(traffic);  // refuses rates that sum above 1 before anything runs

  std::printf("BALROG-layout sweep of babyai/goto: %d episodes, %d in flight, at most %d turns; stub latency log-normal, median %.0f ms, "
              "sigma %.2f, time scale %.3f; %.1f%% 429 (Retry-After 1 s), %.1f%% 5xx\n",
              options.episodes, options.in_flight, options.max_turns, traffic.median_ms, traffic.sigma, traffic.time_scale,
              100 * traffic.rate_429, 100 * traffic.rate_5xx);
  std::fflush(stdout);
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / ("turnrl_bench_sweep_" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  const spdlog::level::level_enum level = spdlog::get_level();
  spdlog::set_level(spdlog::level::warn);  // a line per episode would bury the figures
  const ModeRun lock_step = run_mode(options, dir, true);
  report("lock-step", lock_step);
  const ModeRun async = run_mode(options, dir, false);
  report("async", async);
  spdlog::set_level(level);
  std::filesystem::remove_all(dir);
  std::printf("sweep async speedup %.2fx\n", lock_step.seconds / async.seconds);
  return 0;
}

}  // namespace turnrl::tools
