// Rollout overhead in one run, with the tiny model on BabyAI: the share of turn time spent
// outside LanguageModel::generate (env steps, prompt building, tokenising, parsing, scheduling),
// and the speedup of the pipelined scheduler over a lock-step loop on the same work.
#include <chrono>
#include <cstdio>
#include <filesystem>

#include <unistd.h>

#include <spdlog/spdlog.h>

#include "agents/model/compute_threads.h"
#include "agents/llm_agent.h"
#include "agents/model/model_presets.h"
#include "envs/registry.h"
#include "tools/bench.h"
#include "tools/cli.h"
#include "trainer/rollout/rollout.h"

namespace turnrl::tools {
namespace {

struct Measured {
  double seconds = 0.0, generate_seconds = 0.0;
  size_t turns = 0, batches = 0;
};

Measured measure(const std::shared_ptr<agents::LanguageModel>& model, const std::string& env_id, bool pipelined, int n_env,
                 int e_len, int collections, int max_new_tokens) {
  agents::SamplingParams params;
  params.max_new_tokens = max_new_tokens;
  agents::LlmAgent agent(model, params);
  trainer::RolloutConfig config;
  config.n_env = n_env;
  config.e_len = e_len;
  config.pipelined = pipelined;
  config.turn.layout = trainer::TurnLayout::kVerlog;
  config.turn.history = 1;
  config.turn.reply_format = envs::ReplyFormat::kActionTag;
  trainer::Rollout rollout([&](int) { return envs::make_env(env_id); }, agent, config);
  Measured measured;
  for (int c = 0; c < collections; ++c) {
    const trainer::RolloutBatch batch = rollout.collect();
    measured.seconds += batch.seconds;
    measured.turns += batch.turns.size();
    measured.batches += batch.agent_batches;
  }
  measured.generate_seconds = agent.generate_seconds();
  return measured;
}

}  // namespace

int bench_rollout(int argc, char** argv) {
  CLI::App app{"Rollout overhead with the tiny model: share of turn time outside generation, and the\n"
               "pipelined scheduler's speedup over a lock-step loop on the same work",
               "turnrl bench rollout"};
  std::string env_id = "babyai/goto", model_dir;
  int n_env = 16, e_len = 8, collections = 2, max_new_tokens = 16, threads = 1;
  app.add_option("--env", env_id, "environment id")->capture_default_str();
  app.add_option("--model", model_dir, "model folder (default: a fresh tiny preset in a temp folder)");
  app.add_option("--n-env", n_env, "env slots")->check(CLI::PositiveNumber)->capture_default_str();
  app.add_option("--e-len", e_len, "turns per slot per collection")->check(CLI::PositiveNumber)->capture_default_str();
  app.add_option("--collections", collections, "collections per mode")->check(CLI::PositiveNumber)->capture_default_str();
  app.add_option("--max-new-tokens", max_new_tokens, "reply length limit")->check(CLI::PositiveNumber)->capture_default_str();
  app.add_option("--threads", threads, "torch, BLAS and fused-attention threads of the model (training's tiny configs use 1)")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  if (int code = parse_cli(app, argc, argv); code >= 0) return code;
  agents::set_compute_threads(threads);

  std::filesystem::path temp;
  if (model_dir.empty()) {
    temp = std::filesystem::temp_directory_path() / ("turnrl_bench_rollout_" + std::to_string(::getpid()));
    agents::write_new_model("tiny", temp.string(), 0, "");
    model_dir = temp.string();
  }
  std::shared_ptr<agents::LanguageModel> model = agents::LanguageModel::load(model_dir);
  measure(model, env_id, true, n_env, 1, 1, max_new_tokens);  // warm-up
  const Measured lockstep = measure(model, env_id, false, n_env, e_len, collections, max_new_tokens);
  const Measured pipelined = measure(model, env_id, true, n_env, e_len, collections, max_new_tokens);
  if (!temp.empty()) std::filesystem::remove_all(temp);

  auto report = [](const char* name, const Measured& m) {
    const double outside = 1.0 - m.generate_seconds / m.seconds;
    std::printf("%-10s %6zu turns %4zu batches %8.3f s  %8.1f turns/s  generate %8.3f s  outside the model %5.1f%% of wall\n",
                name, m.turns, m.batches, m.seconds, m.turns / m.seconds, m.generate_seconds, 100.0 * outside);
  };
  report("lock-step", lockstep);
  report("pipelined", pipelined);
  std::printf("share of turn time outside the model (lock-step, where nothing overlaps): %.2f%% (goal < 5%%)\n",
              100.0 * (1.0 - lockstep.generate_seconds / lockstep.seconds));
  std::printf("pipelined speedup over lock-step: %.2fx\n", lockstep.seconds / pipelined.seconds);
  return 0;
}

}  // namespace turnrl::tools
