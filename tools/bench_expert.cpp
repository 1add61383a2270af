// Scripted-expert labelling speed on the states a learner reaches, as a DAgger round labels them:
// each turn the expert is asked for its move, and a stand-in learner plays the expert's move with
// probability --expert-share, a random one otherwise. With --reference-bin, another build runs the
// same episodes in the same command; equal label checksums show both chose the same moves.
#include <chrono>
#include <cstdio>
#include <random>

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "envs/expert.h"
#include "envs/registry.h"
#include "tools/bench.h"
#include "tools/cli.h"

namespace turnrl::tools {
namespace {

struct Options {
  std::string family = "babaisai";
  int episodes = 4;
  double expert_share = 0.5;
  uint64_t seed = 0;
  std::string reference_bin;
};

struct Labelled {
  long labels = 0;
  long guesses = 0;  // labels where the expert found no way on and moved at random
  double seconds = 0.0;
  uint64_t checksum = 0;  // of every label in order: two builds agree on it exactly when their moves agree
};

Labelled label_episodes(const Options& options) {
  Labelled out;
  std::mt19937_64 learner(options.seed);
  std::uniform_real_distribution<double> share(0.0, 1.0);
  const auto start = std::chrono::steady_clock::now();
  for (const std::string& id : envs::env_ids()) {
    if (id.rfind(options.family + "/", 0) != 0) continue;
    auto env = envs::make_env(id);
    std::uniform_int_distribution<int> random_action(0, env->num_actions() - 1);
    for (int e = 0; e < options.episodes; ++e) {
      const uint64_t episode_seed = options.seed + static_cast<uint64_t>(e);
      env->reset(episode_seed);
      for (uint64_t turn = 0;; ++turn) {
        const envs::ExpertMove move = envs::expert_move(*env, episode_seed * 1000003ULL + turn);
        out.checksum = out.checksum * 31 + static_cast<uint64_t>(move.action) + 1;
        ++out.labels;
        out.guesses += move.guess;
        const envs::StepResult result = env->step(share(learner) < options.expert_share ? move.action : random_action(learner));
        if (result.terminated || result.truncated) break;
      }
    }
  }
  out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return out;
}

std::optional<nlohmann::json> reference_run(const Options& options) {
  const std::string command = options.reference_bin + " bench expert --family " + options.family + " --episodes " +
                              std::to_string(options.episodes) + " --expert-share " + std::to_string(options.expert_share) +
                              " --seed " + std::to_string(options.seed) + " 2>&1";
  spdlog::info("reference: {}", command);
  const auto output = command_output(command);
  if (!output) return std::nullopt;
  return last_json_with(*output, "labels_per_sec");
}

}  // namespace

int bench_expert(int argc, char** argv) {
  CLI::App app{"Scripted-expert labels/s on a stand-in learner's states (one thread), as DAgger labels them", "turnrl bench expert"};
  Options options;
  app.add_option("--family", options.family, "env family: every registered id under it is played")->capture_default_str();
  app.add_option("--episodes", options.episodes, "episodes per env id")->check(CLI::PositiveNumber)->capture_default_str();
  app.add_option("--expert-share", options.expert_share, "chance the stand-in learner plays the expert's move")
      ->check(CLI::Range(0.0, 1.0))
      ->capture_default_str();
  app.add_option("--seed", options.seed, "first episode seed; also seeds the learner")->capture_default_str();
  app.add_option("--reference-bin", options.reference_bin, "another build's turnrl, run on the same episodes (e.g. of the commit to compare with)");
  if (int code = parse_cli(app, argc, argv); code >= 0) return code;

  const Labelled own = label_episodes(options);
  if (own.labels == 0) {
    spdlog::error("bench expert: no registered env id under '{}/'", options.family);
    return 1;
  }
  const double own_rate = own.labels / own.seconds;
  nlohmann::json report = {{"family", options.family},        {"episodes_per_id", options.episodes},
                           {"expert_share", options.expert_share}, {"labels", own.labels},
                           {"seconds", own.seconds},              {"labels_per_sec", own_rate},
                           {"checksum", own.checksum},          {"guess_share", static_cast<double>(own.guesses) / own.labels}};
  std::printf("turnrl     %ld labels in %.2f s: %.1f labels/s, %.1f%% of them guesses (no way found)\n", own.labels, own.seconds, own_rate,
              100.0 * own.guesses / own.labels);
  if (!options.reference_bin.empty()) {
    const auto reference = reference_run(options);
    if (!reference) {
      spdlog::error("bench expert: the reference printed no labels_per_sec");
      return 1;
    }
    const double rate = (*reference)["labels_per_sec"].get<double>();
    const bool same = (*reference)["checksum"].get<uint64_t>() == own.checksum;
    std::printf("reference  %.1f labels/s (labels %s)\nexpert speedup %.2fx\n", rate, same ? "identical" : "DIFFER", own_rate / rate);
    report["reference_labels_per_sec"] = rate;
    report["speedup"] = own_rate / rate;
    report["same_labels"] = same;
  }
  std::printf("%s\n", report.dump().c_str());
  return 0;
}

}  // namespace turnrl::tools
