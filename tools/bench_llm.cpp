// Model-side speed in one run: BLAS and its float32 matmul peak, tokenizer MB/s, generation
// tokens/s, the forward pass's share of the matmul peak (tiny preset and a 0.5B shape), and the
// training attention kernel against the torch expressions it replaced.
#include <dlfcn.h>
#include <link.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <set>
#include <tuple>

#include <nlohmann/json.hpp>

#include "agents/model/compute_threads.h"
#include "agents/model/cpu_kernels.h"
#include "agents/model/model_presets.h"
#include "agents/model/qwen2_model.h"
#include "agents/model/tokenizer.h"
#include "tools/bench.h"
#include "tools/bench_timing.h"
#include "tools/cli.h"

namespace turnrl::tools {
namespace {

/** Shared libraries with "blas" in their name that this process has loaded. */
std::string loaded_blas() {
  std::set<std::string> names;
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* data) {
        const std::string name = info->dlpi_name ? info->dlpi_name : "";
        if (name.find("blas") != std::string::npos) {
          std::error_code ec;
          const auto resolved = std::filesystem::canonical(name, ec);
          static_cast<std::set<std::string>*>(data)->insert(ec ? name : resolved.string());
        }
        return 0;
      },
      &names);
  std::string out;
  for (const auto& name : names) out += (out.empty() ? "" : ", ") + name;
  return out.empty() ? "(none found)" : out;
}

double tokenizer_mb_per_s(const std::string& dir, const std::vector<std::string>& texts, int repeats) {
  size_t bytes = 0;
  for (const auto& text : texts) bytes += text.size();
  double best = 0;
  for (int r = 0; r < repeats; ++r) {
    const agents::Tokenizer tokenizer = agents::Tokenizer::load(dir);  // cold word cache every run
    size_t tokens = 0;
    const auto start = Clock::now();
    for (const auto& text : texts) tokens += tokenizer.encode(text).size();
    best = std::max(best, bytes / seconds_since(start) / 1e6);
    if (tokens == 0) return 0;
  }
  return best;
}

struct ModelFigures {
  int64_t params = 0;
  double peak_gflops = 0;  // measured turn about with the forward
  double forward_gflops = 0;
  double shape_gflops = 0;  // the forward's weight products alone, as plain matmuls: what BLAS does at these shapes
  double generate_tokens_per_s = 0;
};

/** GFLOP/s of [tokens, in] x [in, out] products for every weight of the model: one layer's shapes
 *  and the output head's, each timed on its own and counted once per layer that has it. */
double weight_products_gflops(const agents::ModelConfig& config, int64_t tokens) {
  torch::NoGradGuard no_grad;
  const int64_t h = config.hidden_size, q = config.num_attention_heads * config.head_dim(),
                kv = config.num_key_value_heads * config.head_dim(), ff = config.intermediate_size;
  const double layers = config.num_hidden_layers;
  const std::vector<std::tuple<int64_t, int64_t, double>> shapes = {
      {h, q, layers}, {h, kv, layers}, {h, kv, layers}, {q, h, layers}, {h, ff, layers}, {h, ff, layers}, {ff, h, layers},
      {h, config.vocab_size, 1.0}};
  double flops = 0, seconds = 0;
  for (const auto& [in, out, count] : shapes) {
    const torch::Tensor x = torch::randn({tokens, in}), w = torch::randn({in, out});
    seconds += count * best_seconds([&] { torch::mm(x, w); }, 3, kTimingBudgetSeconds / static_cast<double>(shapes.size()));
    flops += count * 2.0 * tokens * in * out;
  }
  return flops / seconds / 1e9;
}

/** Prefill forward of batch x length, and sampled generation with the KV cache, on random weights. */
ModelFigures measure_model(const agents::ModelConfig& config, int batch, int length, int new_tokens, const PeakProduct& peak) {
  torch::NoGradGuard no_grad;
  agents::Qwen2Model model(config, false);
  model->eval();
  ModelFigures figures;
  for (const auto& p : model->parameters()) figures.params += p.numel();
  const torch::Tensor ids = torch::randint(config.vocab_size, {batch, length}, torch::kInt64);
  const torch::Tensor positions = torch::arange(length).repeat({batch, 1});
  const torch::Tensor mask = torch::ones({batch, length}, torch::kBool);
  const std::vector<double> seconds =
      best_seconds_side_by_side({[&] { model->logits(model->forward(ids, positions, mask)); }, peak}, 3, kTimingBudgetSeconds);
  const double forward_seconds = seconds[0];
  figures.peak_gflops = peak.gflops(seconds[1]);
  // Matmul FLOPs: every non-embedding weight (twice per token), the output head, attention scores and mixing.
  const double h = config.hidden_size, tokens = static_cast<double>(batch) * length;
  const double flops = 2.0 * tokens * (config.num_hidden_layers * layer_weights(config) + h * config.vocab_size) +
                       4.0 * batch * static_cast<double>(length) * length * config.num_attention_heads * config.head_dim() *
                           config.num_hidden_layers;
  figures.forward_gflops = flops / forward_seconds / 1e9;
  figures.shape_gflops = weight_products_gflops(config, static_cast<int64_t>(tokens));

  agents::KVCache cache;
  const auto gen_start = Clock::now();
  torch::Tensor hidden = model->forward(ids, positions, mask, &cache);
  torch::Tensor key_mask = mask;
  torch::Tensor next = torch::softmax(model->logits(hidden.select(1, length - 1)), -1).multinomial(1);
  for (int t = 1; t < new_tokens; ++t) {
    key_mask = torch::cat({key_mask, torch::ones({batch, 1}, torch::kBool)}, 1);
    hidden = model->forward(next, torch::full({batch, 1}, length + t - 1, torch::kInt64), key_mask, &cache);
    next = torch::softmax(model->logits(hidden.select(1, 0)), -1).multinomial(1);
  }
  figures.generate_tokens_per_s = static_cast<double>(batch) * new_tokens / seconds_since(gen_start);
  return figures;
}

/** Training attention (forward and backward, autograd on, the rotation included) of the tiny preset's
 *  heads over a PPO mini-batch of BabaIsAI-length prompts, some left-padded: the CPU kernels with
 *  their backward against the torch expressions (mask spelt out per head, math softmax), timed
 *  turn about. Returns seconds. */
std::pair<double, double> measure_training_attention(int64_t batch, int64_t length) {
  const agents::ModelConfig config = agents::preset_config("tiny");
  const int64_t heads = config.num_attention_heads, kv_heads = config.num_key_value_heads, dim = config.head_dim();
  const torch::Tensor qkv = torch::randn({batch, length, heads + 2 * kv_heads, dim}).requires_grad_();
  const torch::Tensor angles = torch::rand({batch, 1, length, dim / 2});
  const torch::Tensor cos = angles.cos().repeat({1, 1, 1, 2}), sin = angles.sin().repeat({1, 1, 1, 2});
  torch::Tensor key_mask = torch::ones({batch, length}, torch::kBool);
  for (int64_t b = 0; b < batch; ++b) key_mask[b].narrow(0, 0, b * length / (4 * batch)).fill_(false);
  const torch::Tensor grad_out = torch::randn({batch, length, heads * dim});
  const auto rotate = [&](const torch::Tensor& x) {  // x [B, H, L, D]
    return x * cos + torch::cat({-x.narrow(-1, dim / 2, dim / 2), x.narrow(-1, 0, dim / 2)}, -1) * sin;
  };
  const std::vector<double> seconds = best_seconds_side_by_side(
      {[&] {
         torch::autograd::grad({agents::trainable_attention(qkv, cos, sin, key_mask, heads, kv_heads, length)}, {qkv}, {grad_out});
       },
       [&] {
         const torch::Tensor additive = agents::additive_mask(key_mask, 0, heads, torch::kFloat32);
         const torch::Tensor q = rotate(qkv.narrow(2, 0, heads).transpose(1, 2)), k = rotate(qkv.narrow(2, heads, kv_heads).transpose(1, 2));
         const torch::Tensor v = qkv.narrow(2, heads + kv_heads, kv_heads).transpose(1, 2);
         torch::autograd::grad({agents::masked_attention(q, k, v, additive)}, {qkv}, {grad_out});
       }},
      3, kTimingBudgetSeconds);
  return {seconds[0], seconds[1]};
}

}  // namespace

int bench_llm(int argc, char** argv) {
  CLI::App app{"Model-side throughput: BLAS peak, tokenizer MB/s, generation tokens/s, forward share of peak,\n"
               "training attention (kernel with its backward vs torch expressions)",
               "turnrl bench llm"};
  std::string tokenizer_dir = "../shared/tokenizers/qwen";
  bool skip_large = false;
  int threads = 0;
  app.add_option("--tokenizer", tokenizer_dir, "folder with tokenizer.json and golden_encode.jsonl")->capture_default_str();
  app.add_flag("--skip-large", skip_large, "skip the 0.5B-class configuration");
  app.add_option("--threads", threads, "torch, BLAS and fused-attention threads (0 = their defaults)")->check(CLI::NonNegativeNumber);
  if (int code = parse_cli(app, argc, argv); code >= 0) return code;
  if (threads > 0) agents::set_compute_threads(threads);

  nlohmann::json report;
  report["blas"] = loaded_blas();
  report["torch_threads"] = torch::get_num_threads();
  report["cpu_kernels"] = agents::cpu_kernels::instruction_set();
  const PeakProduct peak_product(1024);
  const double peak = peak_product.gflops(best_seconds(peak_product, 3, kTimingBudgetSeconds / 2));
  report["matmul_peak_gflops"] = peak;
  std::printf("BLAS: %s (torch threads: %d, fused CPU kernels: %s)\nfloat32 1024x1024 matmul peak: %.1f GFLOP/s\n", report["blas"].get<std::string>().c_str(),
              torch::get_num_threads(), agents::cpu_kernels::instruction_set(), peak);

  std::vector<std::string> texts;
  std::ifstream corpus(tokenizer_dir + "/golden_encode.jsonl");
  for (std::string line; std::getline(corpus, line);) {
    if (!line.empty()) texts.push_back(nlohmann::json::parse(line)["text"].get<std::string>());
  }
  if (!texts.empty()) {
    const double mbps = tokenizer_mb_per_s(tokenizer_dir, texts, 5);
    constexpr double kReferenceMbps = 0.66;  // the independent reference implementation (issue figure)
    report["tokenizer_mb_per_s"] = mbps;
    std::printf("tokenizer (1 thread, cold cache, %zu texts): %.2f MB/s  vs reference %.2f MB/s  (%.1fx)\n", texts.size(),
                mbps, kReferenceMbps, mbps / kReferenceMbps);
  }

  struct Case {
    const char* preset;
    int batch, length, new_tokens;
  };
  std::vector<Case> cases = {{"tiny", 32, 128, 32}};
  if (!skip_large) cases.push_back({"qwen2.5-0.5b", 4, 256, 16});
  for (const Case& c : cases) {
    const ModelFigures figures = measure_model(agents::preset_config(c.preset), c.batch, c.length, c.new_tokens, peak_product);
    report[c.preset] = {{"params", figures.params},
                        {"matmul_peak_gflops", figures.peak_gflops},
                        {"forward_gflops", figures.forward_gflops},
                        {"forward_fraction_of_peak", figures.forward_gflops / figures.peak_gflops},
                        {"weight_products_gflops", figures.shape_gflops},
                        {"generate_tokens_per_s", figures.generate_tokens_per_s}};
    std::printf("%-13s %11lld params  forward %dx%d: %7.1f GFLOP/s = %5.1f%% of the peak timed turn about with it (%.1f GFLOP/s; "
                "its weight products alone as matmuls: %5.1f%%)   generation: %8.1f tokens/s\n",
                c.preset, static_cast<long long>(figures.params), c.batch, c.length, figures.forward_gflops,
                100 * figures.forward_gflops / figures.peak_gflops, figures.peak_gflops,
                100 * figures.shape_gflops / figures.peak_gflops, figures.generate_tokens_per_s);
  }
  constexpr int64_t kMiniBatch = 16, kPromptLength = 400;
  const auto [kernel_s, torch_s] = measure_training_attention(kMiniBatch, kPromptLength);
  report["training_attention"] = {{"kernel_ms", 1e3 * kernel_s}, {"torch_ms", 1e3 * torch_s}, {"speedup", torch_s / kernel_s}};
  std::printf("training attention, forward + backward, tiny heads, %lld x %lld tokens: kernel %.1f ms vs torch expressions "
              "%.1f ms: %.2fx\n",
              static_cast<long long>(kMiniBatch), static_cast<long long>(kPromptLength), 1e3 * kernel_s, 1e3 * torch_s,
              torch_s / kernel_s);
  std::printf("%s\n", report.dump().c_str());
  return 0;
}

}  // namespace turnrl::tools
