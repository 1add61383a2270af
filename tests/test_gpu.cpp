// The CUDA paths against the CPU's figures: golden logits, greedy generation (batched and
// continuous), bf16 autocast, one PPO update, SFT, `serve --device cuda` and data-parallel ranks.
// Without a CUDA libtorch and a visible GPU the whole executable skips (exit code 77, which ctest's
// SKIP_RETURN_CODE reports as skipped) and says why.
#define DOCTEST_CONFIG_IMPLEMENT
#include "torch_doctest.h"

#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <nlohmann/json.hpp>

#include "agents/model/continuous_batcher.h"
#include "agents/model/device.h"
#include "agents/model/generation.h"
#include "agents/model/language_model.h"
#include "agents/model/new_model.h"
#include "agents/model/qwen2_model.h"
#include "server_process.h"
#include "temp_dir.h"
#include "model_golden.h"
#include "test_util.h"
#include "train_test_util.h"
#include "trainer/algo/ppo_update.h"

using namespace turnrl::agents;
using nlohmann::json;

namespace {

constexpr int kSkip = 77;  // SKIP_RETURN_CODE in tests/CMakeLists.txt

const char* const kFloat32Folders[] = {"tiny-qwen2-tied", "tiny-qwen2-untied"};
const torch::Device kCuda(torch::kCUDA, 0);

using turnrl::test::model_folder;
using turnrl::test::model_golden;
using turnrl::test::golden_prompts;
using turnrl::test::to_floats;
using turnrl::test::to_tensor;


double max_abs_difference(Qwen2Model& a, Qwen2Model& b) {
  double most = 0;
  const auto pa = a->parameters(), pb = b->parameters();
  for (size_t i = 0; i < pa.size(); ++i) most = std::max(most, (pa[i].cpu() - pb[i].cpu()).abs().max().item<double>());
  return most;
}

}  // namespace

TEST_CASE("golden logits on CUDA match Hugging Face's (the CPU's figures); a bf16 model runs under autocast") {
  for (const char* name : kFloat32Folders) {
    INFO(name);
    Qwen2Model model = load_qwen2(model_folder(name), false, kCuda);
    torch::NoGradGuard no_grad;
    for (const auto& c : model_golden(name)["cases"]) {
      INFO(c["name"].get<std::string>());
      const torch::Tensor ids = to_tensor(c["input_ids"], torch::kInt64).to(kCuda);
      const torch::Tensor positions = to_tensor(c["position_ids"], torch::kInt64).to(kCuda);
      const torch::Tensor mask = (c["attention_mask"].is_null() ? torch::ones(ids.sizes(), torch::kBool)
                                                                : to_tensor(c["attention_mask"], torch::kBool))
                                     .to(kCuda);
      const torch::Tensor logits = model->logits(model->forward(ids, positions, mask));
      CHECK(logits.device().is_cuda());
      const torch::Tensor last = logits.select(1, ids.size(1) - 1).cpu();
      CHECK((last - to_floats(c["last_logits"]).view(last.sizes())).abs().max().item<double>() < 1e-3);
    }
  }
  // The bf16 folder: float32 weights, bf16 matmuls. Its logits stay near float32's, not equal.
  const std::string name = "tiny-qwen2-untied-bf16";
  Qwen2Model model = load_qwen2(model_folder(name), false, kCuda);
  Qwen2Model reference = load_qwen2(model_folder(name), false, torch::kCPU);
  torch::NoGradGuard no_grad;
  const json gold = model_golden(name);
  const json& c = gold["cases"][0];
  const torch::Tensor ids = to_tensor(c["input_ids"], torch::kInt64);
  const torch::Tensor positions = to_tensor(c["position_ids"], torch::kInt64);
  const torch::Tensor mask = torch::ones(ids.sizes(), torch::kBool);
  const torch::Tensor on_gpu = model->logits(model->forward(ids.to(kCuda), positions.to(kCuda), mask.to(kCuda))).cpu();
  const torch::Tensor on_cpu = reference->logits(reference->forward(ids, positions, mask));
  CHECK((on_gpu.scalar_type() == torch::kFloat32));  // doctest cannot print a ScalarType
  const double scale = on_cpu.abs().max().item<double>();
  const double difference = (on_gpu - on_cpu).abs().max().item<double>();
  INFO("bf16 autocast: max difference " << difference << " over logits up to " << scale);
  CHECK(difference < 0.05 * scale);
}

TEST_CASE("greedy generation on CUDA equals the CPU's, batched and through the continuous batcher") {
  for (const char* name : kFloat32Folders) {
    INFO(name);
    auto cpu = LanguageModel::load(model_folder(name), "cpu");
    auto gpu = LanguageModel::load(model_folder(name), "cuda");
    for (const auto& g : model_golden(name)["generation"]) {
      INFO(g["case"].get<std::string>());
      const auto prompts = golden_prompts(g);
      SamplingParams params;
      params.greedy = true;
      params.max_new_tokens = 20;
      const auto want = cpu->generate(prompts, params);
      const auto got = gpu->generate(prompts, params);
      REQUIRE(got.size() == want.size());
      for (size_t b = 0; b < got.size(); ++b) {
        CHECK(got[b].ids == want[b].ids);
        CHECK(got[b].ids == g["new_tokens"][b].get<std::vector<int32_t>>());
      }
      ContinuousBatcher batcher(*gpu, 4);
      std::map<size_t, GenerationResult> results;
      for (size_t b = 0; b < prompts.size(); ++b) {
        GenerationRequest request;
        request.prompt = prompts[b];
        request.params = params;
        request.on_done = [&results, b](GenerationResult&& result) { results[b] = std::move(result); };
        batcher.add(std::move(request));
        batcher.step();  // each request joins a batch already decoding
      }
      while (!batcher.idle()) batcher.step();
      REQUIRE(results.size() == prompts.size());
      for (size_t b = 0; b < prompts.size(); ++b) {
        CHECK(!results[b].error);
        CHECK(results[b].generation.ids == want[b].ids);
      }
    }
  }
}

namespace {

using turnrl::trainer::LearnerState;

/** A GAE learner (actor and critic) over `dir` on `device`, and a batch with targets. */
void init_learner(LearnerState& learner, const std::string& dir, const torch::Device& device) {
  learner.config.ppo.epochs = 2;
  learner.config.ppo.minibatch = 4;
  learner.device = device;
  learner.actor = load_qwen2(dir, false, device);
  learner.critic = load_qwen2(dir, true, device);
  learner.actor_optimizer = std::make_unique<torch::optim::AdamW>(learner.actor->parameters(), torch::optim::AdamWOptions(1e-3));
  learner.critic_optimizer = std::make_unique<torch::optim::AdamW>(learner.critic->parameters(), torch::optim::AdamWOptions(1e-3));
}

}  // namespace

TEST_CASE("one PPO update on CUDA is the CPU's within tolerance: losses, gradient norm and the weights it leaves") {
  const turnrl::test::TempDir scratch("turnrl_gpu_ppo_test");
  const std::string& root = scratch.path();
  write_new_model("tiny", root + "/model", 3, "");
  turnrl::trainer::RolloutBatch batch;
  batch.n_env = 4;
  batch.e_len = 2;
  turnrl::trainer::TrainingTargets targets;
  for (int i = 0; i < 8; ++i) {
    turnrl::trainer::TurnRecord turn;
    turn.prompt_ids = {5, 6, 7 + i, 9, 11 + i % 3};
    turn.response_ids = {8, 9, static_cast<int32_t>(12 + i)};
    turn.response_ids.resize(2 + i % 2);  // two lengths: padding within mini-batches
    batch.turns.push_back(turn);
    const size_t r = turn.response_ids.size();
    targets.old_logprobs.emplace_back(r, -5.0f);
    targets.advantages.push_back(std::vector<float>(r, i % 2 == 0 ? 1.0f : -0.5f));
    targets.old_values.emplace_back(r + 1, 0.1f * static_cast<float>(i));
    targets.returns.emplace_back(r + 1, i % 3 == 0 ? 1.0f : 0.0f);
  }
  std::map<std::string, json> metrics;
  std::map<std::string, LearnerState> learners;
  for (const std::string device : {"cpu", "cuda"}) {
    LearnerState& learner = learners[device];
    init_learner(learner, root + "/model", resolve_device(device));
    metrics[device] = turnrl::trainer::ppo_update(learner, batch, targets, true, batch.turns.size());
    CHECK(learner.actor->parameters().front().device().is_cuda() == (device == "cuda"));
  }
  INFO("cpu " << metrics["cpu"].dump() << "\ncuda " << metrics["cuda"].dump());
  for (const char* key : {"policy_loss", "value_loss", "entropy", "grad_norm"}) {
    INFO(key);
    CHECK(metrics["cuda"].at(key).get<double>() == doctest::Approx(metrics["cpu"].at(key).get<double>()).epsilon(1e-3));
  }
  // Adam's first steps move each weight by about the learning rate: the CUDA update moves the same
  // weights the same way, far closer than the step itself.
  LearnerState start;
  init_learner(start, root + "/model", torch::kCPU);
  const double moved = max_abs_difference(start.actor, learners["cpu"].actor);
  const double apart = max_abs_difference(learners["cuda"].actor, learners["cpu"].actor);
  INFO("the update moved weights by up to " << moved << "; CUDA and CPU differ by up to " << apart);
  CHECK(moved > 1e-3);
  CHECK(apart < 0.05 * moved);
  CHECK(max_abs_difference(learners["cuda"].critic, learners["cpu"].critic) < 0.05 * max_abs_difference(start.critic, learners["cpu"].critic));
}

TEST_CASE("turnrl sft --device cuda fine-tunes as on the CPU; two ranks (NCCL, or Gloo when they share a GPU) as one") {
  const turnrl::test::TempDir scratch("turnrl_gpu_sft_test");
  const std::string& root = scratch.path();
  write_new_model("tiny", root + "/base", 0, "");
  {
    std::ofstream data(root + "/data.jsonl");
    for (int k = 0; k < 24; ++k) {
      const std::string side = k % 3 == 0 ? "left" : "right";
      data << json{{"messages", {{{"role", "user"}, {"content", "the exit is " + std::to_string(k % 5 + 1) + " steps to the " + side}},
                                 {{"role", "assistant"}, {"content", "ACTION: go " + side}}}}}
                  .dump()
           << "\n";
    }
  }
  const std::string common = "sft --data " + root + "/data.jsonl --model " + root + "/base --set format.epochs=2 --set format.batch_size=8 --set format.lr=3e-3 --threads 1";
  auto losses = [](const std::string& path) {
    std::vector<double> values;
    std::ifstream in(path);
    for (std::string line; std::getline(in, line);) values.push_back(json::parse(line).at("loss").get<double>());
    return values;
  };
  std::map<std::string, std::vector<double>> runs;
  for (const std::string run : {"cpu", "cuda", "cuda2"}) {
    const std::string device = run == "cpu" ? "cpu" : "cuda";
    const auto result = turnrl::test::run_turnrl(common + " --device " + device + (run == "cuda2" ? " --nproc 2" : "") + " --out " + root + "/" + run);
    REQUIRE_MESSAGE(result.exit_code == 0, result.output);
    runs[run] = losses(root + "/" + run + "/sft_metrics.jsonl");
  }
  REQUIRE(runs["cpu"].size() == 6u);
  for (const std::string run : {"cuda", "cuda2"}) {
    INFO(run);
    REQUIRE(runs[run].size() == runs["cpu"].size());
    for (size_t k = 0; k < runs[run].size(); ++k) CHECK(runs[run][k] == doctest::Approx(runs["cpu"][k]).epsilon(1e-3));
  }
}

TEST_CASE("turnrl train on model.device cuda: sampling, scoring and updates on the GPU, one rank and two") {
  const turnrl::test::TempDir scratch("turnrl_gpu_train_test");
  const std::string& root = scratch.path();
  std::filesystem::create_directories(root);
  std::ofstream(root + "/config.yaml") << "model:\n  path: " + root + "/model\n  preset: tiny\n  device: cuda\n  threads: 1\n"
                                          "env:\n  id: babyai/goto\n  n_env: 4\n  e_len: 3\n"
                                          "ppo:\n  minibatch: 6\n  epochs: 2\n  critic_warmup_iterations: 1\n"
                                          "run:\n  iterations: 2\n  checkpoint_every: 2\n  eval_every: 2\n  eval_episodes: 2\n";
  for (const std::string ranks : {"1", "2"}) {
    INFO(ranks << " rank(s)");
    const auto result = turnrl::test::run_turnrl("train --config " + root + "/config.yaml --nproc " + ranks + " --out " + root + "/run" + ranks);
    REQUIRE_MESSAGE(result.exit_code == 0, result.output);
    const auto train = turnrl::test::metrics_of_type(root + "/run" + ranks + "/metrics.jsonl", "train");
    REQUIRE(train.size() == 2u);
    CHECK(train.back().at("turns").get<int>() == std::stoi(ranks) * 4 * 3);
    CHECK(train.back().at("seconds").at("update").get<double>() > 0);
  }
}

namespace {

namespace http = boost::beast::http;

/** One POST to 127.0.0.1:port; the reply's body. */
std::string post(int port, const std::string& target, const std::string& body) {
  boost::asio::io_context io;
  boost::asio::ip::tcp::socket socket(io);
  boost::asio::ip::tcp::resolver resolver(io);
  boost::asio::connect(socket, resolver.resolve("127.0.0.1", std::to_string(port)));
  http::request<http::string_body> request{http::verb::post, target, 11};
  request.set(http::field::host, "127.0.0.1");
  request.set(http::field::content_type, "application/json");
  request.body() = body;
  request.prepare_payload();
  http::write(socket, request);
  boost::beast::flat_buffer buffer;
  http::response<http::string_body> response;
  http::read(socket, buffer, response);
  return response.body();
}

}  // namespace

TEST_CASE("turnrl serve --device cuda answers with the CPU server's greedy reply") {
  const turnrl::test::TempDir scratch("turnrl_gpu_serve_test");
  const std::string& root = scratch.path();
  const auto created = turnrl::test::run_turnrl("new-model --preset tiny --seed 3 --out " + root + "/tiny");
  REQUIRE_MESSAGE(created.exit_code == 0, created.output);
  const json body = {{"model", "tiny"},
                     {"messages", {{{"role", "user"}, {"content", "go to the red ball"}}}},
                     {"max_tokens", 16},
                     {"temperature", 0.0}};
  std::map<std::string, std::string> replies;
  for (const std::string device : {"cpu", "cuda"}) {
    turnrl::test::ServerProcess server(turnrl::test::ServerProcess::Command{"serve --model " + root + "/tiny --port 0 --max-batch 4 --device " + device});
    const std::string& url = server.endpoint();
    const int port = std::stoi(url.substr(url.rfind(':') + 1));
    const json reply = json::parse(post(port, "/v1/chat/completions", body.dump()));
    INFO(device << ": " << reply.dump());
    REQUIRE(reply.contains("choices"));
    replies[device] = reply["choices"][0]["message"]["content"].get<std::string>();
  }
  CHECK(replies["cuda"] == replies["cpu"]);
}

int main(int argc, char** argv) {
  if (!torch::cuda::is_available()) {
    std::printf("test_gpu: skipped: %s\n", !at::hasCUDA()
                                                ? "this libtorch has no CUDA (build against PyTorch's CUDA libtorch: docs/builds.md)"
                                                : "no GPU is visible");
    return kSkip;
  }
  std::printf("test_gpu: %d GPU(s)\n", static_cast<int>(torch::cuda::device_count()));
  doctest::Context context(argc, argv);
  return context.run();
}
