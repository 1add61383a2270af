// Env stepping speed, as the Python reference runners measure it: random actions, next seed on
// episode end, env object reused; with text, the instruction at reset and the observation text
// at every step are built as BALROG's wrapper does.
#include <chrono>
#include <cmath>
#include <cstdio>
#include <random>

#include <nlohmann/json.hpp>

#include "envs/registry.h"
#include "tools/bench.h"
#include "tools/cli.h"
#include "tools/env_options.h"

namespace turnrl::tools {

int bench_env(int argc, char** argv) {
  CLI::App app{"Single-thread environment steps/s (random actions, resets included)", "turnrl bench env"};
  std::string env_id;
  long steps = 100000;
  int repeats = 3;
  bool no_text = false;
  std::string reference;
  std::vector<std::string> option_pairs;
  app.add_option("--env", env_id, "environment id")->required();
  app.add_option("--steps", steps, "steps per repetition")->check(CLI::PositiveNumber)->capture_default_str();
  app.add_option("--repeats", repeats, "repetitions (mean and spread are reported)")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_flag("--no-text", no_text, "skip the text observation (raw env speed)");
  app.add_option("--reference", reference,
                 "command of a reference runner printing JSON with steps_per_sec, run in the same session");
  app.add_option("--env-option", option_pairs, "environment option key=value (repeatable)");
  if (int code = parse_cli(app, argc, argv); code >= 0) return code;

  auto env = envs::make_env(env_id, parse_env_options(option_pairs));
  std::vector<double> rates;
  size_t text_bytes = 0;  // consumed so the text work cannot be optimised away
  long resets = 0;
  for (int r = 0; r < repeats; ++r) {
    std::mt19937 action_rng(0);
    std::uniform_int_distribution<int> pick(0, env->num_actions() - 1);
    uint64_t seed = 0;
    resets = 1;
    const auto start = std::chrono::steady_clock::now();
    env->reset(seed);
    if (!no_text) text_bytes += env->instruction_prompt().size() + env->observe_text().long_term.size();
    for (long i = 0; i < steps; ++i) {
      const envs::StepResult result = env->step(pick(action_rng));
      if (!no_text) text_bytes += env->observe_text().long_term.size();
      if (result.terminated || result.truncated) {
        env->reset(++seed);
        ++resets;
        if (!no_text) text_bytes += env->instruction_prompt().size();
      }
    }
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    rates.push_back(static_cast<double>(steps) / seconds);
  }
  double mean = 0;
  for (double rate : rates) mean += rate;
  mean /= rates.size();
  double var = 0;
  for (double rate : rates) var += (rate - mean) * (rate - mean);
  const double stdev = rates.size() > 1 ? std::sqrt(var / (rates.size() - 1)) : 0.0;

  nlohmann::json report = {{"env", env_id},       {"steps", steps},          {"repeats", repeats},
                           {"text", !no_text},     {"resets_per_run", resets}, {"steps_per_sec", mean},
                           {"steps_per_sec_std", stdev}, {"text_bytes", text_bytes}};
  std::printf("turnrl   %-40s %12.0f steps/s  (+- %.0f, %d x %ld steps, %ld resets/run, text %s)\n",
              env_id.c_str(), mean, stdev, repeats, steps, resets, no_text ? "off" : "on");
  if (!reference.empty()) {
    if (auto ref_rate = run_reference_steps_per_sec(reference)) {
      std::printf("reference %-39s %12.0f steps/s\nratio     %-39s %12.1fx\n", "", *ref_rate, "", mean / *ref_rate);
      report["reference_steps_per_sec"] = *ref_rate;
      report["ratio"] = mean / *ref_rate;
    }
  }
  std::printf("%s\n", report.dump().c_str());
  return 0;
}

}  // namespace turnrl::tools
