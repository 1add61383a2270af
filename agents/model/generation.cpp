#include "agents/model/generation.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>

namespace turnrl::agents {
namespace {

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

}  // namespace

std::pair<int32_t, float> sample_token(const float* logits, const std::vector<int32_t>& candidates, const SamplingParams& params,
                                 std::mt19937_64& rng, std::vector<double>& weight, std::vector<int32_t>& order) {
  float max_logit = -INFINITY;
  for (int32_t c : candidates) max_logit = std::max(max_logit, logits[c]);
  const bool greedy = params.greedy || params.temperature <= 0.0f;
  const double temperature = greedy ? 1.0 : params.temperature;
  weight.resize(candidates.size());
  double total = 0.0;
  for (size_t i = 0; i < candidates.size(); ++i) {
    weight[i] = std::exp((logits[candidates[i]] - max_logit) / temperature);
    total += weight[i];
  }
  if (greedy) {
    const size_t best = std::max_element(weight.begin(), weight.end()) - weight.begin();
    return {candidates[best], static_cast<float>(std::log(weight[best] / total))};
  }
  order.resize(candidates.size());
  std::iota(order.begin(), order.end(), 0);
  size_t keep = candidates.size();
  if ((params.top_k > 0 && static_cast<size_t>(params.top_k) < keep) || params.top_p < 1.0f) {
    std::sort(order.begin(), order.end(), [&](int32_t a, int32_t b) { return weight[a] > weight[b]; });
    if (params.top_k > 0) keep = std::min<size_t>(keep, params.top_k);
    if (params.top_p < 1.0f) {
      double running = 0.0;
      for (size_t i = 0; i < keep; ++i) {
        running += weight[order[i]];
        if (running >= params.top_p * total) {
          keep = i + 1;
          break;
        }
      }
    }
    total = 0.0;
    for (size_t i = 0; i < keep; ++i) total += weight[order[i]];
  }
  double u = std::uniform_real_distribution<double>(0.0, total)(rng);
  int32_t chosen = order[keep - 1];
  for (size_t i = 0; i < keep; ++i) {
    u -= weight[order[i]];
    if (u < 0) {
      chosen = order[i];
      break;
    }
  }
  return {candidates[chosen], static_cast<float>(std::log(weight[chosen] / total))};
}

std::vector<int32_t> sampling_candidates(const SamplingParams& params, int64_t vocab) {
  std::vector<int32_t> candidates = params.allowed_tokens;
  for (int32_t id : candidates) {
    if (id < 0 || id >= vocab) throw std::out_of_range("generate: allowed token " + std::to_string(id) + " is outside the vocabulary");
  }
  if (candidates.empty()) {
    candidates.resize(vocab);
    std::iota(candidates.begin(), candidates.end(), 0);
  }
  return candidates;
}

std::vector<Generation> generate_tokens(Qwen2Model& model, const std::vector<std::vector<int32_t>>& prompts,
                                        const SamplingParams& params, int32_t pad_id, const std::vector<int32_t>& stop_ids) {
  std::vector<Generation> out(prompts.size());
  if (prompts.empty()) return out;
  for (size_t b = 0; b < prompts.size(); ++b) {
    if (prompts[b].empty()) throw std::invalid_argument("generate: prompt " + std::to_string(b) + " is empty");
  }
  torch::NoGradGuard no_grad;
  const torch::Device device = model->parameters().front().device();
  const int64_t batch = static_cast<int64_t>(prompts.size());
  const int64_t vocab = model->config().vocab_size;
  const std::vector<int32_t> candidates = sampling_candidates(params, vocab);
  PaddedBatch padded = left_pad(prompts, pad_id, device);
  KVCache cache;
  torch::Tensor hidden = model->forward(padded.ids, padded.positions, padded.mask, &cache);
  torch::Tensor logits = model->logits(hidden.select(1, hidden.size(1) - 1));
  torch::Tensor key_mask = padded.mask;
  std::vector<int64_t> next_position(batch);
  for (int64_t b = 0; b < batch; ++b) next_position[b] = static_cast<int64_t>(prompts[b].size());
  std::vector<bool> done(batch, false);
  if (!params.row_seeds.empty() && params.row_seeds.size() != prompts.size()) {
    throw std::invalid_argument("generate: " + std::to_string(params.row_seeds.size()) + " row seeds for " +
                                std::to_string(prompts.size()) + " prompts");
  }
  std::vector<std::mt19937_64> rngs;
  if (params.row_seeds.empty()) {
    rngs.emplace_back(params.seed);
  } else {
    for (uint64_t seed : params.row_seeds) rngs.emplace_back(seed);
  }
  std::vector<double> weight;
  std::vector<int32_t> order;
  for (int step = 0; step < params.max_new_tokens; ++step) {
    const torch::Tensor cpu_logits = logits.to(torch::kCPU).contiguous();
    const float* data = cpu_logits.data_ptr<float>();
    torch::Tensor next = torch::full({batch, 1}, pad_id, torch::kInt64);
    torch::Tensor next_mask = torch::zeros({batch, 1}, torch::kBool);
    torch::Tensor next_pos = torch::zeros({batch, 1}, torch::kInt64);
    bool any_running = false;
    for (int64_t b = 0; b < batch; ++b) {
      if (done[b]) continue;
      const auto [token, logprob] = sample_token(data + b * vocab, candidates, params, rngs[rngs.size() == 1 ? 0 : b], weight, order);
      out[b].ids.push_back(token);
      out[b].logprobs.push_back(logprob);
      if (std::find(stop_ids.begin(), stop_ids.end(), token) != stop_ids.end()) {
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
    key_mask = torch::cat({key_mask, next_mask.to(device)}, 1);
    hidden = model->forward(next.to(device), next_pos.to(device), key_mask, &cache);
    logits = model->logits(hidden.select(1, 0));
  }
  return out;
}

ResponseBatch make_response_batch(const std::vector<std::vector<int32_t>>& prompts,
                                  const std::vector<std::vector<int32_t>>& responses, int32_t pad_id, const torch::Device& device) {
  if (prompts.size() != responses.size()) throw std::invalid_argument("prompts and responses differ in count");
  std::vector<std::vector<int32_t>> rows(prompts.size());
  size_t longest = 0;
  for (size_t b = 0; b < prompts.size(); ++b) {
    if (prompts[b].empty()) throw std::invalid_argument("prompt " + std::to_string(b) + " is empty");
    rows[b] = prompts[b];
    rows[b].insert(rows[b].end(), responses[b].begin(), responses[b].end());
    longest = std::max(longest, responses[b].size());
  }
  const PaddedBatch padded = left_pad(rows, pad_id, device);
  ResponseBatch batch;
  batch.ids = padded.ids;
  batch.key_mask = padded.mask;
  batch.positions = padded.positions;
  batch.width = padded.ids.size(1);
  batch.response_width = static_cast<int64_t>(longest);
  const int64_t n = static_cast<int64_t>(prompts.size()), r = batch.response_width;
  torch::Tensor ids = torch::full({n, r}, pad_id, torch::kInt64);
  torch::Tensor mask = torch::zeros({n, r}, torch::kBool);
  auto ids_a = ids.accessor<int64_t, 2>();
  auto mask_a = mask.accessor<bool, 2>();
  for (int64_t b = 0; b < n; ++b) {
    const auto& resp = responses[b];
    const int64_t offset = r - static_cast<int64_t>(resp.size());
    for (size_t t = 0; t < resp.size(); ++t) {
      ids_a[b][offset + static_cast<int64_t>(t)] = resp[t];
      mask_a[b][offset + static_cast<int64_t>(t)] = true;
    }
  }
  batch.response_ids = ids.to(device);
  batch.response_mask = mask.to(device);
  return batch;
}

torch::Tensor response_log_distributions(Qwen2Model& model, const ResponseBatch& batch, const std::vector<int32_t>& allowed_tokens) {
  const int64_t r = batch.response_width;
  // The logits that predict the R response columns sit one column earlier.
  const torch::Tensor hidden = model->forward(batch.ids, batch.positions, batch.key_mask, nullptr, r + 1);
  torch::Tensor logits = model->logits(hidden.narrow(1, 0, r));
  if (!allowed_tokens.empty()) {
    torch::Tensor blocked = torch::ones({logits.size(-1)}, torch::TensorOptions().dtype(torch::kBool).device(logits.device()));
    blocked.index_fill_(0, torch::tensor(std::vector<int64_t>(allowed_tokens.begin(), allowed_tokens.end()), torch::kInt64).to(logits.device()), false);
    logits = logits.masked_fill(blocked, -INFINITY);
  }
  return torch::log_softmax(logits, -1);
}

torch::Tensor response_token_logprobs(const torch::Tensor& log_distributions, const ResponseBatch& batch, torch::Tensor* entropy) {
  if (entropy) {
    const torch::Tensor p = log_distributions.exp();
    *entropy = -(p * log_distributions.masked_fill(p == 0, 0.0)).sum(-1);
  }
  // Masked slots hold the pad id; gather stays in range and their values are ignored.
  return log_distributions.gather(-1, batch.response_ids.unsqueeze(-1)).squeeze(-1);
}

torch::Tensor response_logprobs(Qwen2Model& model, const ResponseBatch& batch, const std::vector<int32_t>& allowed_tokens,
                                torch::Tensor* entropy) {
  return response_token_logprobs(response_log_distributions(model, batch, allowed_tokens), batch, entropy);
}

torch::Tensor response_values(Qwen2Model& critic, const ResponseBatch& batch) {
  const int64_t r = batch.response_width;
  return critic->values(critic->forward(batch.ids, batch.positions, batch.key_mask, nullptr, r + 1));
}

}  // namespace turnrl::agents
