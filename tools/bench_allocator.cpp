// `turnrl bench allocator`: fine-tuning steps of the tiny preset with the heap kept (what `turnrl`
// runs with, tools/main.cpp) against glibc's default allocator, side by side in one run. The
// allocator is fixed for a process's life, so each measurement is a child process (this binary,
// `--worker`), the two settings taking turns round by round.
#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <random>
#include <stdexcept>

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "agents/model/compute_threads.h"
#include "agents/model/model_presets.h"
#include "agents/model/qwen2_model.h"
#include "tools/allocator.h"
#include "tools/bench.h"
#include "tools/cli.h"
#include "trainer/sft/sft_step.h"

namespace turnrl::tools {
namespace {

struct Workload {
  int batch = 64, steps = 4;
  int min_prompt = 250, max_prompt = 500, reply = 9;  // BabaIsAI's format-stage examples, in tokens
};

double cpu_seconds(const timeval& t) { return static_cast<double>(t.tv_sec) + 1e-6 * static_cast<double>(t.tv_usec); }

/** Runs `steps` AdamW steps of the format stage (trainer::sft_step) on random tiny-preset weights and random
 *  tokens (one warm-up step first); prints one JSON line: target tokens/s, minor page faults/s and
 *  the share of CPU time spent in the kernel. */
int run_worker(const Workload& w) {
  const agents::ModelConfig config = agents::preset_config("tiny");
  agents::Qwen2Model model(config, false);
  model->train();
  torch::optim::AdamW optimizer(model->parameters(), torch::optim::AdamWOptions(1e-3).weight_decay(0.0));
  std::mt19937_64 rng(0);
  std::uniform_int_distribution<int> prompt_length(w.min_prompt, w.max_prompt), token(0, static_cast<int>(config.vocab_size) - 2);
  const int32_t pad_id = static_cast<int32_t>(config.vocab_size) - 1;
  double target_tokens = 0;
  auto step = [&] {
    std::vector<std::vector<int32_t>> prompts(w.batch), replies(w.batch);
    for (int b = 0; b < w.batch; ++b) {
      prompts[b].resize(prompt_length(rng));
      replies[b].resize(w.reply);
      for (auto& id : prompts[b]) id = token(rng);
      for (auto& id : replies[b]) id = token(rng);
    }
    target_tokens += trainer::sft_step(model, optimizer, prompts, replies, pad_id, torch::kCPU, 1.0).tokens;
  };
  step();
  target_tokens = 0;
  rusage before{}, after{};
  getrusage(RUSAGE_SELF, &before);
  const auto start = std::chrono::steady_clock::now();
  for (int s = 0; s < w.steps; ++s) step();
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  getrusage(RUSAGE_SELF, &after);
  const double user = cpu_seconds(after.ru_utime) - cpu_seconds(before.ru_utime);
  const double system = cpu_seconds(after.ru_stime) - cpu_seconds(before.ru_stime);
  std::printf("%s\n", nlohmann::json{{"tokens_per_s", target_tokens / seconds},
                                     {"minor_faults_per_s", static_cast<double>(after.ru_minflt - before.ru_minflt) / seconds},
                                     {"system_share", system / std::max(1e-9, user + system)}}
                          .dump()
                          .c_str());
  return 0;
}

nlohmann::json run_child(const std::string& command) {
  const std::optional<std::string> output = command_output(command);
  if (!output) throw std::runtime_error("bench allocator: the worker failed: " + command);
  std::optional<nlohmann::json> figures = last_json_with(*output, "tokens_per_s");
  if (!figures) throw std::runtime_error("bench allocator: the worker printed no figures: " + *output);
  return std::move(*figures);
}

}  // namespace

int bench_allocator(int argc, char** argv) {
  CLI::App app{"Fine-tuning steps of the tiny preset (batch 64 of BabaIsAI-length prompts) with freed memory kept in\n"
               "the heap, as turnrl runs, against glibc's default allocator (" +
                   std::string(kGlibcMallocDefaultsVariable) + "=1), child processes taking turns",
               "turnrl bench allocator"};
  Workload workload;
  int rounds = 3, threads = 1;
  bool worker = false;
  app.add_option("--rounds", rounds, "rounds of one child process per setting")->capture_default_str()->check(CLI::PositiveNumber);
  app.add_option("--steps", workload.steps, "timed steps per child (after one warm-up step)")->capture_default_str()->check(CLI::PositiveNumber);
  app.add_option("--threads", threads, "compute threads per child")->capture_default_str()->check(CLI::PositiveNumber);
  app.add_flag("--worker", worker, "(internal) measure this process and print one JSON line");
  if (int code = parse_cli(app, argc, argv); code >= 0) return code;
  agents::set_compute_threads(threads);
  if (worker) return run_worker(workload);

  const std::string self = std::filesystem::read_symlink("/proc/self/exe").string();
  const std::string worker_command =
      "'" + self + "' bench allocator --worker --steps " + std::to_string(workload.steps) + " --threads " + std::to_string(threads);
  struct Setting {
    const char* name;
    std::string command;
    nlohmann::json best;
  };
  Setting settings[] = {{"heap kept", worker_command, {}},
                        {"glibc defaults", std::string(kGlibcMallocDefaultsVariable) + "=1 " + worker_command, {}}};
  for (int round = 1; round <= rounds; ++round) {
    for (Setting& setting : settings) {
      const nlohmann::json figures = run_child(setting.command);
      spdlog::info("round {}/{} {}: {:.0f} tokens/s, {:.0f} minor faults/s, {:.0f}% of CPU time in the kernel", round, rounds, setting.name,
                   figures["tokens_per_s"].get<double>(), figures["minor_faults_per_s"].get<double>(),
                   100 * figures["system_share"].get<double>());
      if (setting.best.is_null() || figures["tokens_per_s"].get<double>() > setting.best["tokens_per_s"].get<double>()) setting.best = figures;
    }
  }
  const double kept = settings[0].best["tokens_per_s"].get<double>(), defaults = settings[1].best["tokens_per_s"].get<double>();
  for (const Setting& setting : settings) {
    std::printf("%-15s %8.0f target tokens/s  %8.0f minor faults/s  %4.1f%% of CPU time in the kernel  (best of %d)\n", setting.name,
                setting.best["tokens_per_s"].get<double>(), setting.best["minor_faults_per_s"].get<double>(),
                100 * setting.best["system_share"].get<double>(), rounds);
  }
  std::printf("heap kept vs glibc defaults: %.2fx\n", kept / defaults);
  std::printf("%s\n", nlohmann::json{{"heap_kept", settings[0].best}, {"glibc_defaults", settings[1].best}, {"speedup", kept / defaults}}.dump().c_str());
  return 0;
}

}  // namespace turnrl::tools
