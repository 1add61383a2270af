// Asynchronous rollouts against lock-step on the same work, side by side in one run, one case
// after another; each case ends with `async speedup X.XXx` (lock-step time / fiber time):
//  (a) the tiny LLM in process, sampled replies of varying length (up to --max-new-tokens, the
//      stop token allowed), 32 slots; also the share of turn time outside the model;
//  (b) the HTTP agent against `turnrl serve` on loopback, replies of varying length like (a)'s;
//  (c) the HTTP agent against a loopback stub answering after 20-200 ms, 256 slots.
// Replies are seeded per request, so both modes play the same turns.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <memory>

#include <unistd.h>

#include <spdlog/spdlog.h>

#include "agents/http_agent.h"
#include "agents/llm_agent.h"
#include "agents/model/compute_threads.h"
#include "agents/model/new_model.h"
#include "agents/model/qwen2_model.h"
#include "envs/registry.h"
#include "tools/bench.h"
#include "tools/cli.h"
#include "tools/serve/chat_server.h"
#include "tools/serve/openai_stub_server.h"
#include "trainer/rollout/policy_agent.h"
#include "trainer/rollout/rollout.h"

namespace turnrl::tools {
namespace {

struct BenchOptions {
  std::string env_id = "babyai/goto";
  std::string model_dir;
  int e_len = 8, collections = 2, threads = 1;
  int llm_slots = 32, max_new_tokens = 32;
  int http_slots = 256, latency_min_ms = 20, latency_max_ms = 200;
};

struct Measured {
  double seconds = 0.0, agent_seconds = 0.0;
  size_t turns = 0, batches = 0;
  size_t response_tokens = 0, longest_response = 0;  // token-level agents, or replies re-encoded with `tokenizer`
};

/** `collections` fixed-turn collections of `n_env` x e_len turns, lock-step or on fibers. Reply
 *  lengths come from the agent's token ids, or from `tokenizer` re-encoding the reply text. */
Measured measure(agents::Agent& agent, const BenchOptions& options, int n_env, bool lock_step,
                 const agents::Tokenizer* tokenizer = nullptr) {
  trainer::RolloutConfig config;
  config.n_env = n_env;
  config.e_len = options.e_len;
  config.lock_step = lock_step;
  config.progress_s = 5.0;
  config.turn.layout = trainer::TurnLayout::kVerlog;
  config.turn.history = 1;
  config.turn.reply_format = envs::ReplyFormat::kActionTag;
  trainer::Rollout rollout([&](int) { return envs::make_env(options.env_id); }, agent, config);
  Measured measured;
  for (int c = 0; c < options.collections; ++c) {
    const trainer::RolloutBatch batch = rollout.collect();
    measured.seconds += batch.seconds;
    measured.agent_seconds += batch.agent_seconds;
    measured.turns += batch.turns.size();
    measured.batches += batch.agent_batches;
    for (const trainer::TurnRecord& turn : batch.turns) {
      const size_t tokens = tokenizer ? tokenizer->encode(turn.reply).size() : turn.response_ids.size();
      measured.response_tokens += tokens;
      measured.longest_response = std::max(measured.longest_response, tokens);
    }
  }
  return measured;
}

void report(const char* mode, const Measured& m) {
  std::printf("  %-9s %6zu turns %5zu batches %8.3f s %9.1f turns/s\n", mode, m.turns, m.batches, m.seconds, m.turns / m.seconds);
}

void report_speedup(const Measured& lock_step, const Measured& async) {
  report("lock-step", lock_step);
  report("async", async);
  std::printf("async speedup %.2fx\n", lock_step.seconds / async.seconds);
  std::fflush(stdout);
}

/** --model, or a fresh tiny preset. */
std::shared_ptr<agents::LanguageModel> load_model(const BenchOptions& options) {
  if (!options.model_dir.empty()) return agents::LanguageModel::load(options.model_dir);
  const std::filesystem::path temp = std::filesystem::temp_directory_path() / ("turnrl_bench_rollout_" + std::to_string(::getpid()));
  agents::write_new_model("tiny", temp.string(), 0, "");
  std::shared_ptr<agents::LanguageModel> model = agents::LanguageModel::load(temp.string());
  std::filesystem::remove_all(temp);
  return model;
}

/** (a) The tiny LLM: replies sampled from the action tokens and the stop token (as training's
 *  action-token decoding), so their lengths vary up to max_new_tokens. */
void case_llm(const BenchOptions& options) {
  std::printf("(a) tiny LLM in process, %d slots, sampled replies of 1-%d tokens\n", options.llm_slots, options.max_new_tokens);
  const std::shared_ptr<agents::LanguageModel> model = load_model(options);
  trainer::TrainConfig train;
  train.env.ids = {options.env_id};
  train.sampling.action_tokens_only = true;
  train.sampling.max_response_tokens = options.max_new_tokens;
  double generate_seconds = 0;  // of the last run
  auto run = [&](const BenchOptions& run_options, bool lock_step) {
    std::unique_ptr<agents::Agent> agent = trainer::make_policy_agent(model, train, false);
    const Measured measured = measure(*agent, run_options, options.llm_slots, lock_step);
    generate_seconds = dynamic_cast<agents::LlmAgent&>(*agent).generate_seconds();
    return measured;
  };
  BenchOptions warm_up = options;
  warm_up.e_len = 1;
  warm_up.collections = 1;
  run(warm_up, false);
  const Measured lock_step = run(options, true);
  const double lock_step_generate_seconds = generate_seconds;
  const Measured async = run(options, false);
  std::printf("  replies: %.1f tokens on average, %zu at most\n", static_cast<double>(lock_step.response_tokens) / lock_step.turns,
              lock_step.longest_response);
  std::printf("  share of lock-step turn time outside the model: %.2f%% (goal < 5%%)\n",
              100.0 * (1.0 - lock_step_generate_seconds / lock_step.seconds));
  report_speedup(lock_step, async);
}

/** (b)'s default model: the tiny preset with its stop token made likely. A random model samples
 *  its stop token about once in its vocabulary's size, so over the whole vocabulary every reply
 *  would run to the limit and lock-step would lose nothing to a longer one. One dimension of the
 *  tied embedding is set constant over the vocabulary and larger for the stop token, which raises
 *  the stop token's logit over the others' by about the same amount at every step: an entry of
 *  2.2 gives replies of about 9 tokens on average, as (a)'s (measured with the seed-0 preset). */
std::shared_ptr<agents::LanguageModel> model_with_likely_stop(const BenchOptions& options) {
  std::shared_ptr<agents::LanguageModel> model = load_model(options);
  if (!options.model_dir.empty()) return model;  // a real model's own replies
  torch::NoGradGuard no_grad;
  const torch::Tensor embedding = model->module()->model->embed_tokens->weight;
  embedding.select(1, 0).fill_(0.05);
  for (int32_t stop : model->stop_ids()) embedding[stop][0] = 2.2;
  return model;
}

/** (b) The HTTP agent against `turnrl serve`'s server on loopback (in this process, on a thread of
 *  its own), replies sampled over the whole vocabulary, the stop token included. */
void case_serve(const BenchOptions& options) {
  std::printf("(b) HTTP agent against turnrl serve on loopback, %d slots, sampled replies of up to %d tokens\n",
              options.llm_slots, options.max_new_tokens);
  serve::ChatServerOptions server_options;
  server_options.port = 0;
  server_options.model_name = "bench";
  server_options.max_batch = options.llm_slots;
  const std::shared_ptr<agents::LanguageModel> model = model_with_likely_stop(options);
  serve::BackgroundChatServer serving(model, server_options);
  agents::HttpAgentConfig http;
  http.base_url = serving.server().base_url();
  http.model = server_options.model_name;
  http.max_tokens = options.max_new_tokens;
  http.timeout_s = 300;
  http.concurrency = options.llm_slots;
  auto run = [&](const BenchOptions& run_options, bool lock_step) {
    agents::HttpAgent agent(http);
    return measure(agent, run_options, options.llm_slots, lock_step, &model->tokenizer());
  };
  BenchOptions warm_up = options;
  warm_up.e_len = 1;
  warm_up.collections = 1;
  run(warm_up, false);
  const Measured lock_step = run(options, true);
  const Measured async = run(options, false);
  std::printf("  replies: %.1f tokens on average (the stop token not counted), %zu at most\n",
              static_cast<double>(lock_step.response_tokens) / lock_step.turns, lock_step.longest_response);
  report_speedup(lock_step, async);
}

/** (c) The HTTP agent against a stub whose latency and reply come from the request's seed. */
void case_http_stub(const BenchOptions& options) {
  std::printf("(c) HTTP agent against a loopback stub answering in %d-%d ms, %d slots\n", options.latency_min_ms,
              options.latency_max_ms, options.http_slots);
  static const char* kReplies[] = {"turn left", "turn right", "go forward", "pick up", "drop", "toggle"};
  serve::OpenAiStubServer server([&](int, const nlohmann::json& request) {
    const uint64_t seed = request.value("seed", uint64_t{0}) * 0x9E3779B97F4A7C15ULL;
    serve::ChatStubReply response;
    response.content = std::string("<action>") + kReplies[(seed >> 8) % 6] + "</action>";
    response.delay_ms = options.latency_min_ms + static_cast<int>((seed >> 32) % (options.latency_max_ms - options.latency_min_ms + 1));
    return response;
  });
  agents::HttpAgentConfig http;
  http.base_url = server.base_url();
  http.model = "stub";
  http.timeout_s = 30;
  http.concurrency = options.http_slots;
  auto run = [&](bool lock_step) {
    agents::HttpAgent agent(http);
    return measure(agent, options, options.http_slots, lock_step);
  };
  const Measured lock_step = run(true);
  const Measured async = run(false);
  report_speedup(lock_step, async);
}

}  // namespace

int bench_rollout(int argc, char** argv) {
  CLI::App app{"Asynchronous rollouts (one fiber per slot) against lock-step on the same turns, per case:\n"
               "(a) tiny LLM in process, (b) HTTP agent against `turnrl serve`, (c) HTTP agent against a\n"
               "jittered loopback stub. Each case ends with `async speedup X.XXx`.",
               "turnrl bench rollout"};
  BenchOptions options;
  std::vector<std::string> cases = {"a", "b", "c"};
  app.add_option("--case", cases, "cases to run (a, b, c)")->check(CLI::IsMember({"a", "b", "c"}))->capture_default_str();
  app.add_option("--env", options.env_id, "environment id")->capture_default_str();
  app.add_option("--e-len", options.e_len, "turns per slot per collection")->check(CLI::PositiveNumber)->capture_default_str();
  app.add_option("--collections", options.collections, "collections per mode")->check(CLI::PositiveNumber)->capture_default_str();
  app.add_option("--model", options.model_dir, "(a, b) model folder (default: a fresh tiny preset in a temp folder)");
  app.add_option("--llm-slots", options.llm_slots, "(a, b) env slots")->check(CLI::PositiveNumber)->capture_default_str();
  app.add_option("--max-new-tokens", options.max_new_tokens, "(a, b) reply length limit")->check(CLI::PositiveNumber)->capture_default_str();
  app.add_option("--threads", options.threads, "(a, b) torch, BLAS and fused-attention threads of the model (training's tiny configs use 1)")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--http-slots", options.http_slots, "(c) env slots, and the HTTP agent's requests in flight")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--latency-min-ms", options.latency_min_ms, "(c) the stub's shortest answer time")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  app.add_option("--latency-max-ms", options.latency_max_ms, "(c) the stub's longest answer time")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  if (int code = parse_cli(app, argc, argv); code >= 0) return code;
  if (options.latency_max_ms < options.latency_min_ms) throw std::invalid_argument("--latency-max-ms must be >= --latency-min-ms");
  agents::set_compute_threads(options.threads);
  for (const std::string& name : cases) {
    if (name == "a") case_llm(options);
    if (name == "b") case_serve(options);
    if (name == "c") case_http_stub(options);
  }
  return 0;
}

}  // namespace turnrl::tools
