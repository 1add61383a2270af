// The libtorch Qwen2 against Hugging Face's own outputs for the tiny model folders.
#include "torch_doctest.h"

#include <cmath>
#include <limits>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <thread>
#include <tuple>

#include <nlohmann/json.hpp>

#include "agents/model/cpu_kernels.h"
#include "agents/model/language_model.h"
#include "agents/model/model_presets.h"
#include "agents/model/new_model.h"
#include "agents/model/qwen2_model.h"
#include "agents/model/tokenizer.h"
#include "envs/registry.h"
#include "temp_dir.h"
#include "model_golden.h"
#include "test_util.h"

using namespace turnrl::agents;
using nlohmann::json;

namespace {

const char* const kFolders[] = {"tiny-qwen2-tied", "tiny-qwen2-untied", "tiny-qwen2-untied-bf16"};

using turnrl::test::model_folder;
using turnrl::test::model_golden;
using turnrl::test::to_tensor;

double max_abs_diff(const torch::Tensor& got, const json& expected) {
  const torch::Tensor want = turnrl::test::to_floats(expected).view(got.sizes());
  return (got - want).abs().max().item<double>();
}

/** A two-layer model of 50 words with the given widths and heads. */
ModelConfig small_config(int hidden, int heads, int kv_heads, int mlp) {
  ModelConfig config;
  config.vocab_size = 50;
  config.hidden_size = hidden;
  config.intermediate_size = mlp;
  config.num_hidden_layers = 2;
  config.num_attention_heads = heads;
  config.num_key_value_heads = kv_heads;
  return config;
}

}  // namespace

TEST_CASE("logits and log-probs match Hugging Face for every case of every folder, on both paths") {
  torch::set_num_threads(1);
  // Without autograd float32 runs the fused CPU kernels; with it, the torch expressions.
  for (const bool autograd : {false, true})
  for (const char* name : kFolders) {
    INFO(name << (autograd ? " (torch path)" : " (fused kernels where float32)"));
    Qwen2Model model = load_qwen2(model_folder(name), false, torch::kCPU);
    torch::AutoGradMode grad_mode(autograd);
    const json gold = model_golden(name);
    for (const auto& c : gold["cases"]) {
      INFO(c["name"].get<std::string>());
      const torch::Tensor ids = to_tensor(c["input_ids"], torch::kInt64);
      const torch::Tensor positions = to_tensor(c["position_ids"], torch::kInt64);
      const torch::Tensor mask = c["attention_mask"].is_null() ? torch::ones(ids.sizes(), torch::kBool)
                                                               : to_tensor(c["attention_mask"], torch::kBool);
      const torch::Tensor logits = model->logits(model->forward(ids, positions, mask));
      CHECK(max_abs_diff(logits.select(1, ids.size(1) - 1), c["last_logits"]) < 1e-4);
      for (int64_t b = 0; b < ids.size(0); ++b) {
        const auto& cols = c["positions"][b];
        std::vector<int64_t> columns = cols.get<std::vector<int64_t>>();
        const torch::Tensor picked = logits[b].index_select(0, torch::tensor(columns, torch::kInt64));
        CHECK(max_abs_diff(picked, c["logits_at_positions"][b]) < 1e-4);
        if (ids.size(1) < 2) continue;
        const torch::Tensor lp = token_logprobs(logits[b].narrow(0, 0, ids.size(1) - 1), ids[b].narrow(0, 1, ids.size(1) - 1));
        double sum = 0.0;
        for (int64_t t = 0; t + 1 < ids.size(1); ++t) {
          const json& want = c["token_logprobs"][b][t];
          if (want.is_null()) continue;
          CHECK(std::abs(lp[t].item<double>() - want.get<double>()) < 1e-4);
          sum += lp[t].item<double>();
        }
        CHECK(std::abs(sum - c["sum_token_logprobs"][b].get<double>()) < 1e-3);
      }
    }
    // Final-norm hidden state norms for len17.
    const json& hs = gold["hidden_states"];
    const torch::Tensor ids = to_tensor(hs["input_ids"], torch::kInt64);
    const torch::Tensor hidden = model->forward(ids, torch::arange(ids.size(1)).view({1, -1}), torch::ones(ids.sizes(), torch::kBool));
    const torch::Tensor norms = hidden[0].norm(2, -1);
    const auto want = hs["final_norm_output_l2_norm_per_position"].get<std::vector<double>>();
    for (size_t i = 0; i < want.size(); ++i) CHECK(std::abs(norms[i].item<double>() - want[i]) <= 1e-4 * want[i]);
  }
}

TEST_CASE("greedy generation with the KV cache reproduces Hugging Face's tokens, batched and left-padded") {
  torch::set_num_threads(1);
  for (const char* name : kFolders) {
    INFO(name);
    auto lm = LanguageModel::load(model_folder(name));
    const json gold = model_golden(name);
    for (const auto& g : gold["generation"]) {
      INFO(g["case"].get<std::string>());
      const std::vector<std::vector<int32_t>> prompts = turnrl::test::golden_prompts(g);
      SamplingParams params;
      params.greedy = true;
      params.max_new_tokens = 20;
      const auto out = lm->generate(prompts, params);
      for (size_t b = 0; b < out.size(); ++b) CHECK(out[b].ids == g["new_tokens"][b].get<std::vector<int32_t>>());
    }
  }
}

TEST_CASE("the fused CPU kernels equal the torch path: GQA, head sizes, left padding, KV cache") {
  torch::manual_seed(3);
  // head_dim 16 (the presets), 64 (Qwen's), 12 (not a multiple of any vector width); an MLP wide
  // enough that the fused path takes its rows in several chunks (8 x 40 rows > 256).
  for (const auto& [hidden, heads, kv_heads, mlp] :
       {std::tuple{64, 4, 2, 96}, std::tuple{128, 2, 1, 96}, std::tuple{48, 4, 4, 96}, std::tuple{64, 4, 2, 1024}}) {
    const ModelConfig config = small_config(hidden, heads, kv_heads, mlp);
    INFO("hidden " << hidden << ", heads " << heads << ", kv heads " << kv_heads << ", mlp " << mlp);
    Qwen2Model model(config, false);
    {
      torch::NoGradGuard no_grad;
      for (auto& p : model->parameters()) p.normal_(0.0, 0.3);  // large enough that attention is not uniform
    }
    // Row 0 is left-padded by 7 (its first real token at position 0), the others are full.
    const int64_t batch = 8, length = 40, pad = 7;
    const torch::Tensor ids = torch::randint(config.vocab_size, {batch, length}, torch::kInt64);
    torch::Tensor mask = torch::ones({batch, length}, torch::kBool);
    mask[0].narrow(0, 0, pad).fill_(false);
    const torch::Tensor positions = (mask.to(torch::kInt64).cumsum(1) - 1).clamp_min(0);
    const torch::Tensor real = mask.unsqueeze(-1);

    const torch::Tensor reference = model->forward(ids, positions, mask).detach();  // autograd on: torch path
    torch::NoGradGuard no_grad;
    const torch::Tensor fused = model->forward(ids, positions, mask);
    CHECK(((fused - reference) * real).abs().max().item<double>() < 1e-5);
    CHECK(fused.abs().max().item<double>() > 0.1);

    // Prefill 30 tokens, then decode the remaining 10 one at a time through the cache.
    KVCache cache;
    std::vector<torch::Tensor> steps = {model->forward(ids.narrow(1, 0, 30), positions.narrow(1, 0, 30), mask.narrow(1, 0, 30), &cache)};
    for (int64_t t = 30; t < length; ++t) {
      steps.push_back(model->forward(ids.narrow(1, t, 1), positions.narrow(1, t, 1), mask.narrow(1, 0, t + 1), &cache));
    }
    CHECK(((torch::cat(steps, 1) - reference) * real).abs().max().item<double>() < 1e-5);

    // Weights changed in place (an optimiser step, a loaded checkpoint) are what the next pass uses.
    for (auto& p : model->parameters()) p.mul_(0.9).add_(0.01);
    const torch::Tensor changed = model->forward(ids, positions, mask);
    torch::AutoGradMode autograd(true);
    const torch::Tensor changed_reference = model->forward(ids, positions, mask).detach();
    CHECK(((changed - changed_reference) * real).abs().max().item<double>() < 1e-5);
    CHECK(((changed - fused) * real).abs().max().item<double>() > 1e-3);
  }
}

TEST_CASE("keep_last: the last positions' hidden states and gradients equal the full pass's, on both paths") {
  torch::manual_seed(5);
  const ModelConfig config = small_config(64, 4, 2, 96);
  Qwen2Model model(config, false);
  {
    torch::NoGradGuard no_grad;
    for (auto& p : model->parameters()) p.normal_(0.0, 0.3);
  }
  const int64_t batch = 4, length = 30, pad = 9, keep = 5;
  const torch::Tensor ids = torch::randint(config.vocab_size, {batch, length}, torch::kInt64);
  torch::Tensor mask = torch::ones({batch, length}, torch::kBool);
  mask[1].narrow(0, 0, pad).fill_(false);
  const torch::Tensor positions = (mask.to(torch::kInt64).cumsum(1) - 1).clamp_min(0);
  const auto gradients = [&model](const torch::Tensor& loss) {
    model->zero_grad();
    loss.backward();
    std::vector<torch::Tensor> grads;
    for (const auto& p : model->parameters()) grads.push_back(p.grad().defined() ? p.grad().clone() : torch::zeros_like(p));
    return grads;
  };
  // Under autograd (the update's path): the same values, and the same gradients of a loss on them.
  const torch::Tensor full = model->forward(ids, positions, mask).narrow(1, length - keep, keep);
  const torch::Tensor last = model->forward(ids, positions, mask, nullptr, keep);
  REQUIRE(last.sizes() == full.sizes());
  CHECK((last - full).abs().max().item<double>() < 1e-5);
  const torch::Tensor weights = torch::randn(full.sizes());
  const std::vector<torch::Tensor> want = gradients((full * weights).sum()), got = gradients((last * weights).sum());
  double worst = 0, largest = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    worst = std::max(worst, (got[i] - want[i]).abs().max().item<double>());
    largest = std::max(largest, want[i].abs().max().item<double>());
  }
  CHECK(largest > 0.1);
  CHECK(worst < 1e-4 * largest);
  // Without autograd (the fused kernels: scoring).
  torch::NoGradGuard no_grad;
  CHECK((model->forward(ids, positions, mask, nullptr, keep) - full).abs().max().item<double>() < 1e-5);
  CHECK((model->forward(ids, positions, mask, nullptr, length + 3) - model->forward(ids, positions, mask)).abs().max().item<double>() == 0.0);
}

/** Random q [B, L, H, D] and k, v [B, KV, T, D], as the fused attention reads them. */
std::tuple<torch::Tensor, torch::Tensor, torch::Tensor> random_attention_inputs(int64_t batch, int64_t length, int64_t heads,
                                                                                int64_t kv_heads, int64_t dim, int64_t total) {
  return {torch::randn({batch, length, heads, dim}), torch::randn({batch, kv_heads, total, dim}), torch::randn({batch, kv_heads, total, dim})};
}

TEST_CASE("fused attention: the same split over threads as on one, and equal to a plain softmax") {
  torch::manual_seed(5);
  torch::NoGradGuard no_grad;
  // Large enough to be split: 16 (batch, KV head) groups, 2 query heads each, over a 32-key prefix.
  const int64_t batch = 8, length = 128, heads = 4, kv_heads = 2, dim = 32, total = 160;
  torch::Tensor q, k, v;
  std::tie(q, k, v) = random_attention_inputs(batch, length, heads, kv_heads, dim, total);
  torch::Tensor key_mask = torch::ones({batch, total}, torch::kBool);
  key_mask[0].narrow(0, 0, 20).fill_(false);
  key_mask[3].narrow(0, 50, 10).fill_(false);

  cpu_kernels::set_threads(1);
  const torch::Tensor one = cpu_kernels::attention(q, k, v, key_mask);
  cpu_kernels::set_threads(3);
  const torch::Tensor split = cpu_kernels::attention(q, k, v, key_mask);
  // Two callers at once: one has the helper threads, the other runs its parts itself.
  torch::Tensor beside;
  std::thread other([&] { beside = cpu_kernels::attention(q, k, v, key_mask); });
  const torch::Tensor again = cpu_kernels::attention(q, k, v, key_mask);
  other.join();
  CHECK(torch::equal(one, beside));
  CHECK(torch::equal(one, again));
  cpu_kernels::set_threads(static_cast<int>(std::max(1u, std::thread::hardware_concurrency())));
  CHECK(torch::equal(one, split));

  const torch::Tensor query_index = torch::arange(total - length, total).view({length, 1});
  const torch::Tensor visible = (torch::arange(total).view({1, total}) <= query_index).view({1, 1, length, total}) &
                                key_mask.view({batch, 1, 1, total});
  const torch::Tensor scores = torch::matmul(q.transpose(1, 2), k.repeat_interleave(heads / kv_heads, 1).transpose(2, 3)) /
                               std::sqrt(static_cast<double>(dim));
  const torch::Tensor probs = torch::softmax(scores.masked_fill(visible.logical_not(), -INFINITY), -1);
  const torch::Tensor expected = torch::matmul(probs, v.repeat_interleave(heads / kv_heads, 1)).transpose(1, 2).reshape({batch, length, heads * dim});
  CHECK((split - expected).abs().max().item<double>() < 1e-5);
  CHECK_THROWS_AS(cpu_kernels::set_threads(0), std::invalid_argument);
}

TEST_CASE("fused attention: masked keys change no bit, in blocks or scattered, and a fully masked query gets zeros") {
  torch::manual_seed(6);
  torch::NoGradGuard no_grad;
  const int64_t batch = 3, length = 40, heads = 4, kv_heads = 2, dim = 16, total = 100;
  torch::Tensor q, k, v;
  std::tie(q, k, v) = random_attention_inputs(batch, length, heads, kv_heads, dim, total);
  torch::Tensor key_mask = torch::rand({batch, total}) > 0.2;  // scattered masked keys
  key_mask[2].narrow(0, 0, total - length + 5).fill_(false);    // row 2: its first five queries see nothing
  const torch::Tensor plain = cpu_kernels::attention(q, k, v, key_mask);
  CHECK(torch::equal(plain[2].narrow(0, 0, 5), torch::zeros({5, heads * dim})));
  // 48 masked keys of any value inserted at index 32 (a multiple of every vector width) and at the
  // front: the kernel leaves such blocks out, so the output must be the same bit for bit.
  const int64_t inserted = 48;
  const auto widen = [&](const torch::Tensor& x, int64_t at) {
    return torch::cat({x.narrow(2, 0, at), 1e3 * torch::randn({batch, kv_heads, inserted, dim}), x.narrow(2, at, total - at)}, 2);
  };
  const auto widen_mask = [&](int64_t at) {
    return torch::cat({key_mask.narrow(1, 0, at), torch::zeros({batch, inserted}, torch::kBool), key_mask.narrow(1, at, total - at)}, 1);
  };
  for (const int64_t at : {int64_t{0}, int64_t{32}}) {
    INFO("masked block at " << at);
    CHECK(torch::equal(cpu_kernels::attention(q, widen(k, at), widen(v, at), widen_mask(at)), plain));
  }
}

TEST_CASE("trainable attention: gradients equal autograd through a plain softmax; the model trains through it") {
  torch::manual_seed(7);
  // GQA and plain heads; head sizes 16, 12 (no vector width divides it) and 64; only the last
  // positions querying (length < total); row 0 left-padded so that its first queries see no key at all.
  for (const auto& [heads, kv_heads, dim, length, total] :
       {std::tuple{4, 2, 16, 37, 37}, std::tuple{2, 2, 12, 20, 29}, std::tuple{4, 1, 64, 24, 24}}) {
    INFO("heads " << heads << ", kv heads " << kv_heads << ", dim " << dim << ", length " << length << ", total " << total);
    const int64_t batch = 3;
    const torch::Tensor qkv = torch::randn({batch, total, heads + 2 * kv_heads, dim}).requires_grad_();
    // Rotary tables as RoPE's: the same angles for a head's two halves.
    const torch::Tensor angles = torch::rand({batch, 1, total, dim / 2}) * 6.0;
    const torch::Tensor cos = angles.cos().repeat({1, 1, 1, 2}), sin = angles.sin().repeat({1, 1, 1, 2});
    torch::Tensor key_mask = torch::ones({batch, total}, torch::kBool);
    key_mask[0].narrow(0, 0, total - length + 5).fill_(false);
    key_mask[2].narrow(0, 3, 4).fill_(false);
    const torch::Tensor grad_out = torch::randn({batch, length, heads * dim});

    const torch::Tensor fused = trainable_attention(qkv, cos, sin, key_mask, heads, kv_heads, length);
    const torch::Tensor fused_grad = torch::autograd::grad({fused}, {qkv}, {grad_out})[0];

    const auto rotate = [&](const torch::Tensor& x) {  // x [B, H, T, D]
      const torch::Tensor turned = torch::cat({-x.narrow(-1, dim / 2, dim / 2), x.narrow(-1, 0, dim / 2)}, -1);
      return x * cos + turned * sin;
    };
    const torch::Tensor q = rotate(qkv.narrow(2, 0, heads).transpose(1, 2)).narrow(2, total - length, length);
    const torch::Tensor k = rotate(qkv.narrow(2, heads, kv_heads).transpose(1, 2));
    const torch::Tensor v = qkv.narrow(2, heads + kv_heads, kv_heads).transpose(1, 2);
    const torch::Tensor query_index = torch::arange(total - length, total).view({length, 1});
    const torch::Tensor visible = (torch::arange(total).view({1, total}) <= query_index).view({1, 1, length, total}) &
                                  key_mask.view({batch, 1, 1, total});
    const torch::Tensor scores = torch::matmul(q, k.repeat_interleave(heads / kv_heads, 1).transpose(2, 3)) /
                                 std::sqrt(static_cast<double>(dim));
    // A row that sees no key: zeros, as the kernel (softmax over all -inf would be NaN).
    const torch::Tensor sees_any = visible.any(-1, true);
    const torch::Tensor probs = torch::softmax(scores.masked_fill(visible.logical_not(), -1e30), -1) * sees_any;
    const torch::Tensor expected =
        torch::matmul(probs, v.repeat_interleave(heads / kv_heads, 1)).transpose(1, 2).reshape({batch, length, heads * dim});
    const torch::Tensor expected_grad = torch::autograd::grad({expected}, {qkv}, {grad_out})[0];

    CHECK((fused - expected).abs().max().item<double>() < 1e-5);
    const std::string names[] = {"q", "k", "v"};
    const int64_t first[] = {0, heads, heads + kv_heads}, count[] = {heads, kv_heads, kv_heads};
    for (size_t i = 0; i < 3; ++i) {
      INFO("gradient of " << names[i]);
      const torch::Tensor want = expected_grad.narrow(2, first[i], count[i]), got = fused_grad.narrow(2, first[i], count[i]);
      CHECK(want.abs().max().item<double>() > 0.1);
      CHECK((got - want).abs().max().item<double>() < 2e-5);
    }
    // The rows that see nothing, and the positions that query nothing, get no gradient.
    CHECK(fused_grad[0].narrow(0, total - length, 4).narrow(1, 0, heads).abs().max().item<double>() == 0.0);
    if (length < total) CHECK(fused_grad.narrow(1, 0, total - length).narrow(2, 0, heads).abs().max().item<double>() == 0.0);
  }

  // The model's parameter gradients through the kernels equal those of the torch path (a float64
  // copy: the kernels take float32 only) on a left-padded batch: hidden sizes with and without a
  // vector width dividing them (head size 12, MLP 52), every position and only the last 7 queried,
  // and a batch of more rows than one chunk of the MLP's and RMSNorm's backward takes.
  for (const auto& [hidden, heads, kv_heads, mlp, keep_last, batch] :
       {std::tuple{64, 4, 2, 96, 0, 4}, std::tuple{36, 3, 1, 52, 7, 4}, std::tuple{64, 4, 2, 512, 0, 24}}) {
    INFO("hidden " << hidden << ", heads " << heads << ", mlp " << mlp << ", keep_last " << keep_last << ", batch " << batch);
    const ModelConfig config = small_config(hidden, heads, kv_heads, mlp);
    Qwen2Model model(config, false), reference(config, false);
    {
      torch::NoGradGuard no_grad;
      for (auto& p : model->parameters()) p.normal_(0.0, 0.3);
      for (size_t i = 0; i < model->parameters().size(); ++i) reference->parameters()[i].copy_(model->parameters()[i]);
    }
    reference->to(torch::kFloat64);
    const torch::Tensor ids = torch::randint(config.vocab_size, {batch, 30}, torch::kInt64);
    torch::Tensor mask = torch::ones({batch, 30}, torch::kBool);
    mask[1].narrow(0, 0, 9).fill_(false);
    const torch::Tensor positions = (mask.to(torch::kInt64).cumsum(1) - 1).clamp_min(0);
    const int64_t queried = keep_last > 0 ? keep_last : 30;
    const torch::Tensor weights = torch::randn({batch, queried, config.vocab_size}) * mask.narrow(1, 30 - queried, queried).unsqueeze(-1);
    (model->logits(model->forward(ids, positions, mask, nullptr, keep_last)) * weights).sum().backward();
    (reference->logits(reference->forward(ids, positions, mask, nullptr, keep_last)) * weights).sum().backward();
    for (size_t i = 0; i < model->parameters().size(); ++i) {
      const torch::Tensor got = model->parameters()[i].grad(), want = reference->parameters()[i].grad().to(torch::kFloat32);
      INFO("parameter " << model->named_parameters()[i].key());
      REQUIRE(got.defined());
      CHECK(want.abs().max().item<double>() > 0.0);
      CHECK((got - want).abs().max().item<double>() < 1e-4 * std::max(1.0, want.abs().max().item<double>()));
    }
  }
}

TEST_CASE("scoring matches the forward pass and sampling is seeded") {
  auto lm = LanguageModel::load(model_folder("tiny-qwen2-untied"));
  const json gold = model_golden("tiny-qwen2-untied");
  const auto& c = gold["cases"][2];  // len17
  std::vector<int32_t> ids = c["input_ids"][0].get<std::vector<int32_t>>();
  const std::vector<int32_t> prompt(ids.begin(), ids.begin() + 5), response(ids.begin() + 5, ids.end());
  // The same response scored alone and next to a longer, left-padding row.
  const auto scored = lm->score({prompt, ids}, {response, {7, 8}});
  REQUIRE(scored[0].size() == response.size());
  for (size_t t = 0; t < response.size(); ++t) {
    CHECK(std::abs(scored[0][t] - c["token_logprobs"][0][4 + t].get<float>()) < 1e-4);
  }
  // The shorter response is right-aligned in the batch: its log-probs are those it gets alone.
  const auto scored_alone = lm->score({ids}, {{7, 8}});
  REQUIRE(scored[1].size() == 2);
  for (size_t t = 0; t < 2; ++t) CHECK(std::abs(scored[1][t] - scored_alone[0][t]) < 1e-4);
  SamplingParams params;
  params.max_new_tokens = 12;
  params.seed = 42;
  params.top_k = 50;
  params.top_p = 0.9f;
  const auto a = lm->generate({prompt, ids}, params);
  const auto b = lm->generate({prompt, ids}, params);
  CHECK(a[0].ids == b[0].ids);
  CHECK(a[1].logprobs == b[1].logprobs);
  for (const auto& gen : a) {
    CHECK(gen.ids.size() == 12);
    for (float lp : gen.logprobs) CHECK(lp <= 0.0f);
  }
  // Sampled log-probs are the sampling distribution's: rescoring at temperature 1 without
  // truncation gives values no larger than the truncated, renormalised ones.
  const auto rescored = lm->score({prompt}, {a[0].ids});
  for (size_t t = 0; t < a[0].ids.size(); ++t) CHECK(rescored[0][t] <= a[0].logprobs[t] + 1e-5f);

  // With one stream per row, a row samples the same tokens alone as beside another row.
  params.temperature = 1.5f;
  params.row_seeds = {7, 8};
  const auto pair = lm->generate({prompt, ids}, params);
  params.row_seeds = {7};
  const auto alone = lm->generate({prompt}, params);
  CHECK(alone[0].ids == pair[0].ids);
  params.row_seeds = {8};
  CHECK(lm->generate({prompt}, params)[0].ids != alone[0].ids);  // the streams differ
  params.row_seeds = {1, 2, 3};
  CHECK_THROWS_AS(lm->generate({prompt}, params), std::invalid_argument);
}

TEST_CASE("a missing or misshapen tensor is named") {
  const turnrl::test::TempDir run_dir("turnrl_bad_model");
  const std::string dir = run_dir / "model";
  std::filesystem::create_directories(dir);
  std::filesystem::copy_file(model_folder("tiny-qwen2-untied") + "/config.json", dir + "/config.json");
  auto tensors = load_qwen2(model_folder("tiny-qwen2-untied"), false, torch::kCPU)->weights_to_write();
  auto without = tensors;
  without.erase(std::remove_if(without.begin(), without.end(), [](const auto& t) { return t.name == "lm_head.weight"; }), without.end());
  write_safetensors(dir + "/model.safetensors", without);
  CHECK_THROWS_WITH_AS(load_qwen2(dir, false, torch::kCPU), doctest::Contains("missing tensor 'lm_head.weight'"), std::runtime_error);
  for (auto& t : tensors) {
    if (t.name == "model.norm.weight") {
      t.shape = {32};
      t.data.resize(32 * 4);
    }
  }
  write_safetensors(dir + "/model.safetensors", tensors);
  CHECK_THROWS_WITH_AS(load_qwen2(dir, false, torch::kCPU), doctest::Contains("'model.norm.weight' has shape"), std::runtime_error);
  std::filesystem::remove(dir + "/model.safetensors");
  CHECK_THROWS_WITH_AS(load_qwen2(dir, false, torch::kCPU), doctest::Contains("no model.safetensors"), std::runtime_error);
}

TEST_CASE("the tiny preset encodes BabyAI prompts without unknown words") {
  const turnrl::test::TempDir run_dir("turnrl_tiny_preset");
  const std::string dir = run_dir / "model";
  write_new_model("tiny", dir, 1, "");
  auto lm = LanguageModel::load(dir);
  const Tokenizer& tok = lm->tokenizer();
  const std::string text =
      "You are an agent playing a simple navigation game. Your goal is to put the red ball next to a blue key. "
      "Current Observation:\na wall 3 steps forward\na locked yellow door 2 steps left and 1 step forward\n"
      "You carry a grey box";
  const auto ids = tok.encode_chat({{"user", text}, {"assistant", "turn left"}}, true);
  CHECK(std::find(ids.begin(), ids.end(), tok.token_id("<unk>")) == ids.end());
  CHECK(lm->parameter_count() < 200000);
  CHECK(tok.stop_ids() == std::vector<int32_t>{tok.token_id("<|im_end|>")});
}

TEST_CASE("the tiny preset names every action of several words in one token that reads back as the name") {
  const turnrl::test::TempDir run_dir("turnrl_tiny_actions");
  write_new_model("tiny", run_dir / "model", 1, "");
  const Tokenizer tok = Tokenizer::load(run_dir / "model");
  size_t joined = 0;
  for (const turnrl::envs::EnvFamily& family : turnrl::envs::env_families()) {
    for (const turnrl::envs::ActionSpec& action : family.actions) {
      const std::string word = action.joined_name();
      if (word == action.name) continue;  // one word: the family's vocabulary lists it
      ++joined;
      const int32_t id = tok.token_id(word);
      REQUIRE_MESSAGE(id >= 0, family.name << ": " << action.name);
      CHECK(tok.decode({id}) == action.name);
      // A cloned reply naming the action is the token the policy samples.
      CHECK(tok.encode_reply(action.name) == std::vector<int32_t>{id});
    }
  }
  CHECK(joined >= 18);  // BabyAI's four and Crafter's fourteen
  // Text with spaces still splits into words: only the joined spelling, or a whole reply, is one token.
  CHECK(tok.encode("Move West").size() == 2);
  CHECK(tok.encode_reply("ACTION: Move West") == tok.encode("ACTION: Move West"));
  CHECK(tok.encode_reply("Do") == tok.encode("Do"));
}

TEST_CASE("the tiny-deep and tiny-wide presets are the tiny one deeper or wider, with the same tokenizer") {
  const ModelConfig tiny = preset_config("tiny"), deep = preset_config("tiny-deep"), wide = preset_config("tiny-wide");
  CHECK(tiny.num_hidden_layers == 2);
  CHECK(deep.num_hidden_layers == 4);
  CHECK(deep.hidden_size == tiny.hidden_size);
  CHECK(deep.vocab_size == tiny.vocab_size);
  CHECK(wide.num_hidden_layers == tiny.num_hidden_layers);
  CHECK(wide.hidden_size == 2 * tiny.hidden_size);
  CHECK(wide.intermediate_size == 2 * tiny.intermediate_size);
  CHECK(wide.vocab_size == tiny.vocab_size);
  const turnrl::test::TempDir run_dir("turnrl_tiny_deep_preset");
  const std::string dir = run_dir / "model";
  write_new_model("tiny-deep", dir, 1, "");
  write_new_model("tiny", dir + "/shallow", 1, "");
  CHECK(ModelConfig::load(dir + "/config.json").num_hidden_layers == 4);
  auto read = [](const std::string& path) { return std::string(std::istreambuf_iterator<char>(std::ifstream(path).rdbuf()), {}); };
  CHECK(read(dir + "/tokenizer.json") == read(dir + "/shallow/tokenizer.json"));
  auto deep_lm = LanguageModel::load(dir), tiny_lm = LanguageModel::load(dir + "/shallow");
  CHECK(deep_lm->parameter_count() > tiny_lm->parameter_count());
  write_new_model("tiny-wide", dir + "/wide", 1, "");
  CHECK(read(dir + "/wide/tokenizer.json") == read(dir + "/shallow/tokenizer.json"));
  CHECK(LanguageModel::load(dir + "/wide")->parameter_count() > 3 * tiny_lm->parameter_count());
  CHECK_THROWS_WITH_AS(preset_config("huge"), doctest::Contains("tiny-deep"), std::invalid_argument);
}

TEST_CASE("a new model draws its weights with the initializer range its config.json records") {
  const turnrl::test::TempDir run_dir("turnrl_initializer_range");
  const std::string dir = run_dir / "model";
  write_new_model("tiny", dir + "/default", 1, "");
  write_new_model("tiny", dir + "/wide_init", 1, "", 0.125);
  for (const auto& [name, range] : {std::pair{"default", 0.02}, std::pair{"wide_init", 0.125}}) {
    INFO(name);
    const std::string path = dir + "/" + name;
    CHECK(ModelConfig::load(path + "/config.json").initializer_range == doctest::Approx(range));
    const Qwen2Model model = load_qwen2(path, false, torch::kCPU);
    for (const auto& item : model->named_parameters()) {
      INFO(item.key());
      if (item.key().ends_with("norm.weight")) {
        CHECK(item.value().eq(1.0).all().item<bool>());
      } else if (item.key().ends_with(".bias")) {
        CHECK(item.value().eq(0.0).all().item<bool>());
      } else {
        CHECK(item.value().std().item<double>() == doctest::Approx(range).epsilon(0.1));
      }
    }
  }
  CHECK_THROWS_AS(write_new_model("tiny", dir + "/bad", 1, "", 0.0), std::invalid_argument);
}

TEST_CASE("save and reload round-trips the weights") {
  auto lm = LanguageModel::load(model_folder("tiny-qwen2-tied"));
  const turnrl::test::TempDir run_dir("turnrl_saved_tiny");
  const std::string dir = run_dir / "model";
  lm->save(dir);
  auto again = LanguageModel::load(dir);
  SamplingParams params;
  params.greedy = true;
  params.max_new_tokens = 10;
  CHECK(lm->generate({{1, 2, 3}}, params)[0].ids == again->generate({{1, 2, 3}}, params)[0].ids);
  CHECK(lm->parameter_count() == again->parameter_count());
}

TEST_CASE("a sharded folder (index + shards) loads the same weights; a missing shard is named") {
  auto lm = LanguageModel::load(model_folder("tiny-qwen2-tied"));
  const turnrl::test::TempDir run_dir("turnrl_sharded_tiny");
  const std::string dir = run_dir / "model";
  lm->save(dir);
  {
    const SafetensorsFile whole = SafetensorsFile::load(dir + "/model.safetensors");
    std::vector<TensorToWrite> shards[2];
    json weight_map = json::object();
    size_t i = 0;
    for (const auto& [name, view] : whole.tensors()) {
      const size_t shard = i++ % 2;
      shards[shard].push_back({name, view.dtype, view.shape, std::vector<uint8_t>(view.data, view.data + view.bytes)});
      weight_map[name] = "model-0000" + std::to_string(shard + 1) + "-of-00002.safetensors";
    }
    for (size_t shard = 0; shard < 2; ++shard) {
      write_safetensors(dir + "/model-0000" + std::to_string(shard + 1) + "-of-00002.safetensors", shards[shard]);
    }
    std::ofstream(dir + "/model.safetensors.index.json") << json{{"metadata", json::object()}, {"weight_map", weight_map}}.dump();
  }
  std::filesystem::remove(dir + "/model.safetensors");
  auto sharded = LanguageModel::load(dir);
  SamplingParams params;
  params.greedy = true;
  params.max_new_tokens = 10;
  CHECK(lm->generate({{1, 2, 3}}, params)[0].ids == sharded->generate({{1, 2, 3}}, params)[0].ids);
  CHECK(lm->score({{1, 2, 3}}, {{4, 5}}) == sharded->score({{1, 2, 3}}, {{4, 5}}));
  std::filesystem::remove(dir + "/model-00002-of-00002.safetensors");
  CHECK_THROWS_WITH(LanguageModel::load(dir), doctest::Contains("model-00002-of-00002.safetensors"));
}

TEST_CASE("a model whose weights hold NaN or Inf is refused at load, naming the file and tensor") {
  const turnrl::test::TempDir run_dir("turnrl_nan_tiny");
  const std::string dir = run_dir / "model";
  for (const float bad : {std::nanf(""), std::numeric_limits<float>::infinity()}) {
    std::filesystem::remove_all(dir);
    Qwen2Model model = load_qwen2(model_folder("tiny-qwen2-tied"), false, torch::kCPU);
    {
      torch::NoGradGuard no_grad;
      model->named_parameters()["model.norm.weight"][0].fill_(bad);
    }
    save_qwen2(model, dir);
    CHECK_THROWS_WITH_AS(load_qwen2(dir, false, torch::kCPU),
                         doctest::Contains("model.safetensors: tensor 'model.norm.weight' holds NaN or Inf values"), std::runtime_error);
  }
  std::filesystem::remove_all(dir);
}
