#include "agents/language_model.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <numeric>
#include <optional>
#include <random>

#include "agents/qwen2_model.h"

namespace turnrl::agents {

struct LanguageModel::Impl {
  Qwen2Model model{nullptr};
  std::optional<Tokenizer> tokenizer;  // absent for bare model folders (token ids only)
  torch::Device device{torch::kCPU};
  int32_t pad_id = 0;
  std::vector<int32_t> stop_ids;
};

LanguageModel::LanguageModel(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
LanguageModel::~LanguageModel() = default;

std::unique_ptr<LanguageModel> LanguageModel::load(const std::string& dir, const std::string& device_name) {
  auto impl = std::make_unique<Impl>();
  impl->device = torch::Device(device_name);
  impl->model = load_qwen2(dir, false, impl->device);
  impl->model->eval();
  if (std::filesystem::exists(dir + "/tokenizer.json")) {
    impl->tokenizer = Tokenizer::load(dir);
    impl->pad_id = impl->tokenizer->pad_id();
    impl->stop_ids = impl->tokenizer->stop_ids();
  }
  return std::unique_ptr<LanguageModel>(new LanguageModel(std::move(impl)));
}

const Tokenizer& LanguageModel::tokenizer() const {
  if (!impl_->tokenizer) throw std::logic_error("this model folder has no tokenizer.json");
  return *impl_->tokenizer;
}

int64_t LanguageModel::parameter_count() const {
  int64_t total = 0;
  for (const auto& p : impl_->model->parameters()) total += p.numel();
  return total;
}

void LanguageModel::save(const std::string& dir) { save_qwen2(impl_->model, dir); }

namespace {

/** Left-padded batch: ids, key mask and position ids (first real token at position 0). */
struct PaddedBatch {
  torch::Tensor ids, mask, positions;
};

PaddedBatch left_pad(const std::vector<std::vector<int32_t>>& rows, int32_t pad, const torch::Device& device) {
  size_t width = 0;
  for (const auto& row : rows) width = std::max(width, row.size());
  const int64_t batch = static_cast<int64_t>(rows.size());
  torch::Tensor ids = torch::full({batch, static_cast<int64_t>(width)}, pad, torch::kInt64);
  torch::Tensor mask = torch::zeros({batch, static_cast<int64_t>(width)}, torch::kBool);
  torch::Tensor positions = torch::zeros({batch, static_cast<int64_t>(width)}, torch::kInt64);
  auto ids_a = ids.accessor<int64_t, 2>();
  auto mask_a = mask.accessor<bool, 2>();
  auto pos_a = positions.accessor<int64_t, 2>();
  for (int64_t b = 0; b < batch; ++b) {
    const size_t offset = width - rows[b].size();
    for (size_t i = 0; i < rows[b].size(); ++i) {
      ids_a[b][offset + i] = rows[b][i];
      mask_a[b][offset + i] = true;
      pos_a[b][offset + i] = static_cast<int64_t>(i);
    }
  }
  return {ids.to(device), mask.to(device), positions.to(device)};
}

/** Samples one token from float32 logits on the CPU; returns (token, log-prob under the sampling distribution). */
std::pair<int32_t, float> sample(const float* logits, int64_t vocab, const SamplingParams& params, std::mt19937_64& rng,
                                 std::vector<float>& scratch, std::vector<int32_t>& order) {
  if (params.greedy || params.temperature <= 0.0f) {
    const int64_t best = std::max_element(logits, logits + vocab) - logits;
    double total = 0.0;
    for (int64_t i = 0; i < vocab; ++i) total += std::exp(static_cast<double>(logits[i] - logits[best]));
    return {static_cast<int32_t>(best), static_cast<float>(-std::log(total))};
  }
  scratch.assign(logits, logits + vocab);
  const float max_logit = *std::max_element(scratch.begin(), scratch.end());
  for (float& x : scratch) x = std::exp((x - max_logit) / params.temperature);
  order.resize(vocab);
  std::iota(order.begin(), order.end(), 0);
  int64_t keep = vocab;
  if ((params.top_k > 0 && params.top_k < vocab) || params.top_p < 1.0f) {
    std::sort(order.begin(), order.end(), [&](int32_t a, int32_t b) { return scratch[a] > scratch[b]; });
    if (params.top_k > 0) keep = std::min<int64_t>(keep, params.top_k);
    if (params.top_p < 1.0f) {
      const double total = std::accumulate(order.begin(), order.begin() + keep, 0.0, [&](double s, int32_t i) { return s + scratch[i]; });
      double running = 0.0;
      for (int64_t i = 0; i < keep; ++i) {
        running += scratch[order[i]];
        if (running >= params.top_p * total) {
          keep = i + 1;
          break;
        }
      }
    }
  }
  double total = 0.0;
  for (int64_t i = 0; i < keep; ++i) total += scratch[order[i]];
  double u = std::uniform_real_distribution<double>(0.0, total)(rng);
  int32_t chosen = order[keep - 1];
  for (int64_t i = 0; i < keep; ++i) {
    u -= scratch[order[i]];
    if (u < 0) {
      chosen = order[i];
      break;
    }
  }
  return {chosen, static_cast<float>(std::log(scratch[chosen] / total))};
}

}  // namespace

std::vector<Generation> LanguageModel::generate(const std::vector<std::vector<int32_t>>& prompts, const SamplingParams& params) {
  std::vector<Generation> out(prompts.size());
  if (prompts.empty()) return out;
  for (size_t b = 0; b < prompts.size(); ++b) {
    if (prompts[b].empty()) throw std::invalid_argument("generate: prompt " + std::to_string(b) + " is empty");
  }
  torch::NoGradGuard no_grad;
  Impl& self = *impl_;
  const int64_t batch = static_cast<int64_t>(prompts.size());
  const int64_t vocab = self.model->config().vocab_size;
  PaddedBatch padded = left_pad(prompts, self.pad_id, self.device);
  KVCache cache;
  torch::Tensor hidden = self.model->forward(padded.ids, padded.positions, padded.mask, &cache);
  torch::Tensor logits = self.model->logits(hidden.select(1, hidden.size(1) - 1));
  torch::Tensor key_mask = padded.mask;
  std::vector<int64_t> next_position(batch);
  for (int64_t b = 0; b < batch; ++b) next_position[b] = static_cast<int64_t>(prompts[b].size());
  std::vector<bool> done(batch, false);
  const auto& stops = self.stop_ids;
  std::mt19937_64 rng(params.seed);
  std::vector<float> scratch;
  std::vector<int32_t> order;
  for (int step = 0; step < params.max_new_tokens; ++step) {
    const torch::Tensor cpu_logits = logits.to(torch::kCPU).contiguous();
    const float* data = cpu_logits.data_ptr<float>();
    torch::Tensor next = torch::full({batch, 1}, self.pad_id, torch::kInt64);
    torch::Tensor next_mask = torch::zeros({batch, 1}, torch::kBool);
    torch::Tensor next_pos = torch::zeros({batch, 1}, torch::kInt64);
    bool any_running = false;
    for (int64_t b = 0; b < batch; ++b) {
      if (done[b]) continue;
      const auto [token, logprob] = sample(data + b * vocab, vocab, params, rng, scratch, order);
      out[b].ids.push_back(token);
      out[b].logprobs.push_back(logprob);
      if (std::find(stops.begin(), stops.end(), token) != stops.end()) {
        out[b].stopped = true;
        done[b] = true;
        continue;
      }
      any_running = true;
      next[b][0] = token;
      next_mask[b][0] = true;
      next_pos[b][0] = next_position[b]++;
    }
    if (!any_running || step + 1 == params.max_new_tokens) break;
    key_mask = torch::cat({key_mask, next_mask.to(self.device)}, 1);
    hidden = self.model->forward(next.to(self.device), next_pos.to(self.device), key_mask, &cache);
    logits = self.model->logits(hidden.select(1, 0));
  }
  return out;
}

std::vector<std::vector<float>> LanguageModel::score(const std::vector<std::vector<int32_t>>& prompts,
                                                     const std::vector<std::vector<int32_t>>& responses) {
  if (prompts.size() != responses.size()) throw std::invalid_argument("score: prompts and responses differ in count");
  std::vector<std::vector<float>> out(prompts.size());
  if (prompts.empty()) return out;
  std::vector<std::vector<int32_t>> rows(prompts.size());
  for (size_t b = 0; b < prompts.size(); ++b) {
    if (prompts[b].empty()) throw std::invalid_argument("score: prompt " + std::to_string(b) + " is empty");
    rows[b] = prompts[b];
    rows[b].insert(rows[b].end(), responses[b].begin(), responses[b].end());
  }
  torch::NoGradGuard no_grad;
  Impl& self = *impl_;
  const PaddedBatch padded = left_pad(rows, self.pad_id, self.device);
  const torch::Tensor hidden = self.model->forward(padded.ids, padded.positions, padded.mask);
  const torch::Tensor logits = self.model->logits(hidden.narrow(1, 0, hidden.size(1) - 1));
  const torch::Tensor logprobs = token_logprobs(logits, padded.ids.narrow(1, 1, hidden.size(1) - 1)).to(torch::kCPU);
  const int64_t width = padded.ids.size(1);
  for (size_t b = 0; b < rows.size(); ++b) {
    const int64_t first = width - static_cast<int64_t>(responses[b].size());  // column of the first response token
    for (int64_t col = first; col < width; ++col) out[b].push_back(logprobs[b][col - 1].item<float>());
  }
  return out;
}

}  // namespace turnrl::agents
