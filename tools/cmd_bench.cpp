#include <cstdio>
#include <cstring>

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "tools/bench.h"
#include "tools/cli.h"
#include "tools/command.h"

namespace turnrl::tools {

const std::vector<Command>& benchmarks() {
  static const std::vector<Command> all = {
      {"env", "single-thread env steps/s with text observations, resets included", bench_env},
      {"expert", "scripted-expert labels/s on a stand-in learner's states, as DAgger labels them, vs another build", bench_expert},
      {"crafter", "Crafter step and reset speed against crafter_ref.py bench", bench_crafter},
      {"env-server", "steps/s through an env server vs in-process, batches of 1, 16, 256", bench_env_server},
#ifdef TURNRL_WITH_TORCH
      {"llm", "BLAS peak, tokenizer MB/s, generation tokens/s, forward share of peak, training attention", bench_llm},
      {"rollout", "asynchronous (fiber) rollouts vs lock-step: tiny LLM, HTTP agent against a stub", bench_rollout},
      {"sweep", "an eval sweep against a stub with a hosted API's latency tail, 429s and 5xx: asynchronous vs lock-step", bench_sweep},
      {"serve", "a sweep against turnrl serve without and with the prefix cache: speedup against Amdahl's bound", bench_serve},
      {"reward", "streaming vs synchronous scoring by an HTTP scorer: share of scorer time hidden", bench_reward},
      {"allocator", "fine-tuning steps with freed memory kept in the heap vs glibc's default allocator", bench_allocator},
      {"update", "PPO update seconds per collected turn on a config's prompts, share of matmul peak, vs another build", bench_update},
#endif
  };
  return all;
}

namespace {

void print_usage() {
  std::printf("usage: turnrl bench <benchmark> [options]\n\nbenchmarks:\n");
  for (const Command& bench : benchmarks()) std::printf("  %-10s %s\n", bench.name.c_str(), bench.summary.c_str());
}

}  // namespace

std::optional<std::string> command_output(const std::string& command) {
  FILE* pipe = popen(command.c_str(), "r");
  if (!pipe) {
    spdlog::warn("command could not start: {}", command);
    return std::nullopt;
  }
  std::string output;
  char buffer[4096];
  while (size_t n = std::fread(buffer, 1, sizeof buffer, pipe)) output.append(buffer, n);
  const int status = pclose(pipe);
  if (status != 0) {
    spdlog::warn("command failed (status {}): {}", status, command);
    return std::nullopt;
  }
  return output;
}

std::optional<nlohmann::json> last_json_with(const std::string& output, const std::string& key) {
  std::optional<nlohmann::json> found;
  size_t start = 0;
  while (start < output.size()) {
    size_t end = output.find('\n', start);
    if (end == std::string::npos) end = output.size();
    auto line = nlohmann::json::parse(output.substr(start, end - start), nullptr, false);
    if (line.is_object() && line.contains(key) && line[key].is_number()) found = std::move(line);
    start = end + 1;
  }
  return found;
}

std::optional<double> run_reference_steps_per_sec(const std::string& command) {
  const std::optional<std::string> output = command_output(command);
  if (!output) return std::nullopt;
  const std::optional<nlohmann::json> figures = last_json_with(*output, "steps_per_sec");
  if (!figures) {
    spdlog::warn("reference printed no steps_per_sec: {}", command);
    return std::nullopt;
  }
  return (*figures)["steps_per_sec"].get<double>();
}

int run_bench(int argc, char** argv) {
  if (argc < 2 || !std::strcmp(argv[1], "--help") || !std::strcmp(argv[1], "-h")) {
    print_usage();
    return argc < 2 ? kExitUsage : 0;
  }
  for (const Command& bench : benchmarks()) {
    if (bench.name == argv[1]) return bench.run(argc - 1, argv + 1);
  }
  std::fprintf(stderr, "turnrl bench: unknown benchmark '%s'\n", argv[1]);
  print_usage();
  return kExitUsage;
}

}  // namespace turnrl::tools
