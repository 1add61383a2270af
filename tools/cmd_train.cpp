#include <atomic>
#include <csignal>
#include <ctime>

#include <spdlog/spdlog.h>

#include "tools/cli.h"
#include "tools/command.h"
#include "tools/rank_launcher.h"
#include "trainer/dist/distributed.h"
#include "trainer/run/ppo_trainer.h"

namespace turnrl::tools {
namespace {

std::atomic<bool> stop_requested{false};
std::atomic<int64_t> first_request_ns{0};

int64_t monotonic_ns() {
  timespec now{};
  clock_gettime(CLOCK_MONOTONIC, &now);  // async-signal-safe
  return static_cast<int64_t>(now.tv_sec) * 1'000'000'000 + now.tv_nsec;
}

/** The first SIGINT/SIGTERM asks the loop to finish its iteration and save. A second one kills,
 *  unless it comes within a second: one signal sent to a process group can arrive twice. */
extern "C" void request_training_stop(int signal_number) {
  const int64_t now = monotonic_ns();
  if (!stop_requested.exchange(true)) {
    first_request_ns.store(now);
  } else if (now - first_request_ns.load() > 1'000'000'000) {
    std::signal(signal_number, SIG_DFL);
    std::raise(signal_number);
  }
}

}  // namespace

int run_train(int argc, char** argv) {
  CLI::App app{"Train an LLM policy with turn-level PPO (see configs/*.yaml). The run always saves its final\n"
               "state when it stops (iterations done, --minutes or --total-minutes reached, SIGINT/SIGTERM):\n"
               "RUN/checkpoint to resume from and RUN/model, a Hugging Face folder that generate, eval and play take.\n"
               "Data-parallel: --nproc N runs N ranks here; --rank/--world-size/--master joins a run across\n"
               "machines. Each rank collects env.n_env slots of its own, rank 0 writes the run folder.",
               "turnrl train"};
  std::string config_path, resume;
  std::vector<std::string> overrides;
  RankOptions rank_options;
  app.add_option("--config", config_path, "YAML config")->required()->check(CLI::ExistingFile);
  app.add_option("--resume", resume, "continue a run (RUN or RUN/checkpoint)")->check(CLI::ExistingDirectory);
  app.add_option("--set", overrides, "SECTION.KEY=VALUE: override a key of --config, checked as the file's own\n"
                                     "(`turnrl config --reference` lists them), e.g. --set ppo.clip=0.1 --set env.id=[babyai/goto]");
  // Shorthands of --set for the keys runs override most.
  const auto shorthand = [&](const char* flag, const char* key, const char* what) {
    app.add_option_function<std::string>(flag, [&overrides, key](const std::string& value) { overrides.push_back(std::string(key) + "=" + value); },
                                         std::string("--set ") + key + "=VALUE: " + what);
  };
  shorthand("--out", "run.out", "the run folder");
  shorthand("--iterations", "run.iterations", "PPO iterations");
  shorthand("--minutes", "run.minutes", "PPO's limit (0 = no limit)");
  shorthand("--total-minutes", "run.total_minutes", "the whole run's limit, format stage included (0 = no limit)");
  rank_options.add_to(app);
  if (int code = parse_cli(app, argc, argv); code >= 0) return code;
  const trainer::TrainConfig config = trainer::TrainConfig::load(config_path, overrides);
  if (const std::optional<int> code = rank_options.launch(argc, argv)) return *code;
  const std::shared_ptr<trainer::ProcessGroup> ranks = rank_options.join();
  trainer::PpoTrainer trainer(config, resume, ranks);
  std::signal(SIGINT, request_training_stop);
  std::signal(SIGTERM, request_training_stop);
  trainer.train(&stop_requested);
  return 0;
}

}  // namespace turnrl::tools
