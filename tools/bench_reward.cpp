// Streaming against synchronous reward scoring on the same rollout (rewards.md section 3): the tiny
// model plays two identical rollouts (same seeds), whose samples an external HTTP scorer scores, a
// loopback stub answering after a fixed latency. Synchronous: every sample is sent after the
// collection; streaming: each as it finishes, while the other slots generate. The update waits for
// the whole scored batch in both, so what streaming saves is the scorer time it hides.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>

#include <unistd.h>

#include "agents/llm_agent.h"
#include "agents/model/compute_threads.h"
#include "agents/model/new_model.h"
#include "envs/registry.h"
#include "tools/bench.h"
#include "tools/cli.h"
#include "tools/serve/stub_http_server.h"
#include "trainer/rewards/http_scorer.h"
#include "trainer/rollout/rollout.h"

namespace turnrl::tools {
namespace {

using Clock = std::chrono::steady_clock;

struct BenchOptions {
  std::string env_id = "babyai/goto";
  int n_env = 16, e_len = 16, collections = 3, max_new_tokens = 16;
  // 32 x (1 / 50 ms) = 640 samples/s, above the rollout's 320-400 turns/s here: a pool slower than
  // the rollout leaves its backlog after the collection whatever the schedule (at 16 in flight the
  // pool's 320/s sits at the rollout's rate, and the share hidden swings between 75% and 89%).
  int concurrency = 32;
  bool episodes = false;  // score episodes (the episode manager's samples) instead of turns
};

struct Measured {
  double collect_seconds = 0.0, wait_seconds = 0.0, scoring_seconds = 0.0;
  size_t turns = 0;
  std::vector<std::string> replies;  // to check that both modes played the same rollout
  double total() const { return collect_seconds + wait_seconds; }
};

/** One mode's rollout and reward workers; both modes start from the same seeds. */
class Mode {
 public:
  Mode(const std::shared_ptr<agents::LanguageModel>& model, const BenchOptions& options, const std::string& scorer_url, bool streaming)
      : agent_(model, sampling(options)),
        stream_(std::make_shared<trainer::HttpScorer>(scorer(scorer_url)),
                {options.episodes ? trainer::SampleUnit::kEpisode : trainer::SampleUnit::kTurn, options.concurrency, 1}) {
    trainer::RolloutConfig config;
    config.n_env = options.n_env;
    config.e_len = options.e_len;
    config.turn.layout = trainer::TurnLayout::kVerlog;
    config.turn.history = 1;
    config.turn.reply_format = envs::ReplyFormat::kActionTag;
    if (streaming) config.on_turn_finished = [this](size_t row, const trainer::TurnRecord& turn) { stream_.observe(row, turn); };
    rollout_ = std::make_unique<trainer::Rollout>([env_id = options.env_id](int) { return envs::make_env(env_id); }, agent_, config);
  }
  /** One collection, scored; the update would start when this returns. */
  void collect(Measured& measured) {
    const auto start = Clock::now();
    const trainer::RolloutBatch batch = rollout_->collect();
    const auto collected = Clock::now();
    stream_.finish(batch);
    measured.collect_seconds += std::chrono::duration<double>(collected - start).count();
    measured.wait_seconds += std::chrono::duration<double>(Clock::now() - collected).count();
    measured.scoring_seconds += stream_.scoring_seconds();
    measured.turns += batch.turns.size();
    for (const auto& turn : batch.turns) measured.replies.push_back(turn.reply);
  }

 private:
  static agents::SamplingParams sampling(const BenchOptions& options) {
    agents::SamplingParams params;
    params.max_new_tokens = options.max_new_tokens;
    return params;
  }
  static trainer::HttpScorerConfig scorer(const std::string& url) {
    trainer::HttpScorerConfig config;
    config.url = url;
    return config;
  }

  agents::LlmAgent agent_;
  trainer::ScoringStream stream_;
  std::unique_ptr<trainer::Rollout> rollout_;
};

}  // namespace

int bench_reward(int argc, char** argv) {
  CLI::App app{"Streaming against synchronous reward scoring on the same rollout of the tiny model, with a loopback\n"
               "HTTP scorer stub of a fixed latency: both timings and the share of scorer time streaming hides",
               "turnrl bench reward"};
  BenchOptions options;
  int latency_ms = 50, threads = 1;
  std::string model_dir;
  app.add_option("--scorer-latency", latency_ms, "the stub scorer's answer latency in ms")->check(CLI::NonNegativeNumber)->capture_default_str();
  app.add_option("--env", options.env_id, "environment id")->capture_default_str();
  app.add_option("--model", model_dir, "model folder (default: a fresh tiny preset in a temp folder)");
  app.add_option("--n-env", options.n_env, "env slots")->check(CLI::PositiveNumber)->capture_default_str();
  app.add_option("--e-len", options.e_len, "turns per slot per collection")->check(CLI::PositiveNumber)->capture_default_str();
  app.add_option("--collections", options.collections, "collections per mode (the modes alternate)")->check(CLI::PositiveNumber)->capture_default_str();
  app.add_option("--max-new-tokens", options.max_new_tokens, "reply length limit")->check(CLI::PositiveNumber)->capture_default_str();
  app.add_option("--concurrency", options.concurrency, "scorer requests in flight at once (reward workers)")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_flag("--episodes", options.episodes, "score whole episodes (the episode manager's samples) instead of turns");
  app.add_option("--threads", threads, "torch, BLAS and fused-attention threads of the model")->check(CLI::PositiveNumber)->capture_default_str();
  if (int code = parse_cli(app, argc, argv); code >= 0) return code;
  agents::set_compute_threads(threads);

  std::filesystem::path temp;
  if (model_dir.empty()) {
    temp = std::filesystem::temp_directory_path() / ("turnrl_bench_reward_" + std::to_string(::getpid()));
    agents::write_new_model("tiny", temp.string(), 0, "");
    model_dir = temp.string();
  }
  std::shared_ptr<agents::LanguageModel> model = agents::LanguageModel::load(model_dir);
  // The stub scores every turn with its env reward, after the latency.
  serve::StubHttpServer stub([latency_ms](int, const std::string&, const nlohmann::json& request) {
    nlohmann::json scores = nlohmann::json::array();
    for (const auto& turn : request.at("turns")) scores.push_back(turn.at("env_reward"));
    return serve::StubReply{200, {{"scores", scores}}, latency_ms};
  });
  const std::string url = stub.url("/score");
  {
    Measured ignored;
    Mode(model, options, url, true).collect(ignored);  // warm-up
  }
  // Collections of the two modes alternate, so that a change in the machine's load hits both.
  Mode sync_mode(model, options, url, false), streaming_mode(model, options, url, true);
  Measured sync, streaming;
  for (int c = 0; c < options.collections; ++c) {
    sync_mode.collect(sync);
    streaming_mode.collect(streaming);
  }
  if (!temp.empty()) std::filesystem::remove_all(temp);

  auto report = [](const char* name, const Measured& m) {
    std::printf("%-12s %5zu turns  collect %7.3f s + waiting for scores %7.3f s = %7.3f s  (scorer busy %7.3f s over its workers)\n",
                name, m.turns, m.collect_seconds, m.wait_seconds, m.total(), m.scoring_seconds);
  };
  std::printf("scorer: loopback HTTP stub, %d ms per request, %d in flight at most; samples: %s\n", latency_ms, options.concurrency,
              options.episodes ? "episodes" : "turns");
  report("synchronous", sync);
  report("streaming", streaming);
  std::printf("same rollout in both modes: %s\n", sync.replies == streaming.replies ? "yes" : "NO (replies differ)");
  // The scorer time the update waits for synchronously, and how much of it streaming removes; the
  // end-to-end figure also counts what scoring alongside generation costs the collection (and the
  // machine's noise, which can push it past 100%).
  const double hidden = sync.wait_seconds > 0 ? 1.0 - streaming.wait_seconds / sync.wait_seconds : 0.0;
  const double end_to_end = sync.wait_seconds > 0 ? (sync.total() - streaming.total()) / sync.wait_seconds : 0.0;
  // Streaming hides latency, not throughput: a pool busier than the collection is long leaves the
  // difference after the collection whatever the schedule, and the last answer is always waited for.
  const double pool_seconds = streaming.scoring_seconds / options.concurrency;
  const double least_wait = std::max(latency_ms / 1000.0 * options.collections, pool_seconds - streaming.collect_seconds);
  std::printf("scorer pool busy %.3f s per worker over a %.3f s collection: streaming can hide at most %.1f%%\n", pool_seconds,
              streaming.collect_seconds, sync.wait_seconds > 0 ? 100.0 * std::max(0.0, 1.0 - least_wait / sync.wait_seconds) : 0.0);
  std::printf("scorer time hidden by streaming: %.1f%% of the synchronous wait (goal >= 80%% at 50 ms)\n", 100.0 * hidden);
  std::printf("end to end: %.1f%% of the synchronous wait saved, speedup %.2fx; streaming's collection took %+.1f%% vs synchronous\n",
              100.0 * end_to_end, sync.total() / streaming.total(), 100.0 * (streaming.collect_seconds / sync.collect_seconds - 1.0));
  return 0;
}

}  // namespace turnrl::tools
