// Crafter step and reset speed against the Python reference (`crafter_ref.py bench`), measured the
// way that runner measures: one env object, RandomState(12345).randint(0, 17) actions, reset on
// done (next episode of the same seed), step time and reset time accumulated separately.
#include <chrono>
#include <cstdio>

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "envs/common/numpy_random.h"
#include "envs/crafter/crafter_env.h"
#include "tools/bench.h"
#include "tools/cli.h"

namespace turnrl::tools {
namespace {

/** The last JSON object line a command prints, or null (with a warning) when it fails. */
nlohmann::json run_reference_json(const std::string& command) {
  FILE* pipe = popen(command.c_str(), "r");
  if (!pipe) {
    spdlog::warn("reference command could not start: {}", command);
    return nullptr;
  }
  std::string output;
  char buffer[4096];
  while (size_t n = std::fread(buffer, 1, sizeof buffer, pipe)) output.append(buffer, n);
  if (pclose(pipe) != 0) {
    spdlog::warn("reference command failed: {}", command);
    return nullptr;
  }
  nlohmann::json last;
  size_t start = 0;
  while (start < output.size()) {
    size_t end = output.find('\n', start);
    if (end == std::string::npos) end = output.size();
    auto line = nlohmann::json::parse(output.substr(start, end - start), nullptr, false);
    if (line.is_object()) last = std::move(line);
    start = end + 1;
  }
  if (last.is_null()) spdlog::warn("reference printed no JSON: {}", command);
  return last;
}

}  // namespace

int bench_crafter(int argc, char** argv) {
  CLI::App app{"Crafter steps/s and reset time against the Python reference", "turnrl bench crafter"};
  long steps = 20000;
  bool balrog = false;
  std::string reference;
  app.add_option("--steps", steps, "env steps (resets on done are timed separately)")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_flag("--balrog", balrog, "BALROG's mode (256x256 renders twice per step: 32x the night-time draws)");
  app.add_option("--reference", reference,
                 "reference command printing crafter_ref.py bench JSON (steps_per_sec, ms_per_reset), "
                 "e.g. \"/usr/bin/python3 ../shared/ref/crafter_ref.py bench --steps 2000 --no-render\"");
  if (int code = parse_cli(app, argc, argv); code >= 0) return code;

  envs::crafter::CrafterConfig config;
  config.balrog = balrog;
  if (balrog) config.size = {256, 256};
  envs::crafter::CrafterEnv env(balrog ? "crafter/balrog" : "crafter", config);
  envs::RandomState action_rng(12345);
  using Clock = std::chrono::steady_clock;
  double step_seconds = 0, reset_seconds = 0;
  int episode = 0;
  bool done = true;
  long checksum = 0;  // keeps the work observable
  for (long n = 0; n < steps; ++n) {
    if (done) {
      const auto t0 = Clock::now();
      env.reset_episode(0, ++episode);
      reset_seconds += std::chrono::duration<double>(Clock::now() - t0).count();
    }
    const int action = static_cast<int>(action_rng.randint(0, envs::crafter::kNumActions));
    const auto t0 = Clock::now();
    const envs::StepResult result = env.step(action);
    step_seconds += std::chrono::duration<double>(Clock::now() - t0).count();
    done = env.crafter_done();
    checksum += static_cast<long>(result.reward * 10);
  }
  const double steps_per_sec = steps / step_seconds;
  const double ms_per_reset = 1000 * reset_seconds / episode;
  nlohmann::json report = {{"env", env.id()},
                           {"steps", steps},
                           {"steps_per_sec", steps_per_sec},
                           {"steps_per_sec_incl_resets", steps / (step_seconds + reset_seconds)},
                           {"resets", episode},
                           {"ms_per_reset", ms_per_reset},
                           {"reward_checksum", checksum}};
  std::printf("turnrl    %-8s %12.0f steps/s  %9.3f ms/reset  (%ld steps, %d resets)\n", env.id().c_str(),
              steps_per_sec, ms_per_reset, steps, episode);
  if (!reference.empty()) {
    const nlohmann::json ref = run_reference_json(reference);
    if (ref.is_object() && ref.contains("steps_per_sec") && ref.contains("ms_per_reset")) {
      const double ref_steps = ref["steps_per_sec"].get<double>();
      const double ref_reset = ref["ms_per_reset"].get<double>();
      std::printf("reference %-8s %12.0f steps/s  %9.3f ms/reset\n", "", ref_steps, ref_reset);
      std::printf("ratio     %-8s %11.1fx steps    %9.1fx reset\n", "", steps_per_sec / ref_steps,
                  ref_reset / ms_per_reset);
      report["reference"] = ref;
      report["step_ratio"] = steps_per_sec / ref_steps;
      report["reset_ratio"] = ref_reset / ms_per_reset;
    }
  }
  std::printf("%s\n", report.dump().c_str());
  return 0;
}

}  // namespace turnrl::tools
