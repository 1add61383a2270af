#include "agents/model/qwen2_model.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <limits>
#include <set>
#include <tuple>

#include <ATen/autocast_mode.h>
#include <nlohmann/json.hpp>
#include <torch/version.h>

#include "agents/model/cpu_kernels.h"
#include "agents/model/tokenizer.h"

namespace turnrl::agents {

std::pair<torch::Tensor, torch::Tensor> StackedProjections::get(const std::vector<torch::nn::Linear>& parts) {
  if (torch::GradMode::is_enabled()) {  // training: a fresh concatenation, through which the parts get their gradients
    std::vector<torch::Tensor> weights, biases;
    for (const auto& part : parts) {
      weights.push_back(part->weight);
      if (part->bias.defined()) biases.push_back(part->bias);
    }
    return {torch::cat(weights, 0), biases.empty() ? torch::Tensor() : torch::cat(biases, 0)};
  }
  std::vector<int64_t> versions;
  for (const auto& part : parts) {
    versions.push_back(part->weight._version());
    if (part->bias.defined()) versions.push_back(part->bias._version());
  }
  const std::lock_guard lock(mutex_);
  if (versions != versions_ || !weight_.defined()) {
    torch::NoGradGuard no_grad;
    std::vector<torch::Tensor> weights, biases;
    for (const auto& part : parts) {
      weights.push_back(part->weight);
      if (part->bias.defined()) biases.push_back(part->bias);
    }
    weight_ = torch::cat(weights, 0);
    bias_ = biases.empty() ? torch::Tensor() : torch::cat(biases, 0);
    versions_ = versions;
  }
  return {weight_, bias_};
}

std::pair<torch::Tensor, torch::Tensor> KVCache::append(size_t layer, const torch::Tensor& k, const torch::Tensor& v) {
  if (keys.size() <= layer) {
    keys.push_back(k);
    values.push_back(v);
  } else {
    keys[layer] = torch::cat({keys[layer], k}, 2);
    values[layer] = torch::cat({values[layer], v}, 2);
  }
  return {keys[layer], values[layer]};
}

SlotCache::SlotCache(const ModelConfig& config, const torch::TensorOptions& options)
    : layers_(config.num_hidden_layers), kv_heads_(config.num_key_value_heads), head_dim_(config.head_dim()),
      max_positions_(config.max_position_embeddings), options_(options) {}

void SlotCache::reserve(int64_t slots, int64_t tokens) {
  const int64_t have_slots = storage_.defined() ? storage_.size(2) : 0, have_tokens = storage_.defined() ? storage_.size(4) : 0;
  if (slots <= have_slots && tokens <= have_tokens) return;
  const int64_t new_slots = slots <= have_slots ? have_slots : std::max(slots, 2 * have_slots);
  const int64_t new_tokens = tokens <= have_tokens ? have_tokens : std::min(max_positions_, std::max(tokens, 2 * have_tokens));
  torch::NoGradGuard no_grad;
  torch::Tensor grown = torch::zeros({layers_, 2, new_slots, kv_heads_, new_tokens, head_dim_}, options_);
  if (storage_.defined()) grown.narrow(2, 0, have_slots).narrow(4, 0, have_tokens).copy_(storage_);
  storage_ = grown;
}

torch::Tensor SlotCache::entries(int64_t slot, int64_t from, int64_t count) const { return storage_.select(2, slot).narrow(3, from, count); }

void SlotCache::move(int64_t from, int64_t to) {
  const int64_t length = lengths_.at(static_cast<size_t>(from));
  if (from != to && length > 0) {
    torch::NoGradGuard no_grad;
    entries(to, 0, length).copy_(entries(from, 0, length));
  }
  lengths_.at(static_cast<size_t>(to)) = length;
  if (from != to) lengths_.at(static_cast<size_t>(from)) = 0;
}

void SlotCache::clear(int64_t slot) {
  if (slot < static_cast<int64_t>(lengths_.size())) lengths_[static_cast<size_t>(slot)] = 0;
}

int64_t SlotCache::length(int64_t slot) const {
  return slot < static_cast<int64_t>(lengths_.size()) ? lengths_[static_cast<size_t>(slot)] : 0;
}

KVBlock SlotCache::copy_out(int64_t slot, int64_t from, int64_t count) const {
  TORCH_CHECK(from >= 0 && count >= 0 && from + count <= length(slot), "SlotCache: copy_out beyond the slot's length");
  torch::NoGradGuard no_grad;
  return {entries(slot, from, count).clone()};
}

void SlotCache::copy_in(int64_t slot, int64_t at, const KVBlock& block, int64_t count) {
  TORCH_CHECK(at >= 0 && at <= length(slot) && count >= 0 && count <= block.tokens(), "SlotCache: copy_in out of range");
  TORCH_CHECK(block.kv.size(0) == layers_ && block.kv.size(2) == kv_heads_ && block.kv.size(4) == head_dim_, "SlotCache: a block of another model");
  reserve(slot + 1, at + count);
  if (slot >= static_cast<int64_t>(lengths_.size())) lengths_.resize(static_cast<size_t>(slot + 1), 0);
  torch::NoGradGuard no_grad;
  entries(slot, at, count).copy_(block.kv.narrow(3, 0, count));
  lengths_[static_cast<size_t>(slot)] = at + count;
}

std::pair<torch::Tensor, torch::Tensor> SlotCache::begin_step(int64_t first, int64_t rows, int64_t step_length,
                                                               const std::vector<int64_t>& tokens) {
  TORCH_CHECK(tokens.empty() || static_cast<int64_t>(tokens.size()) == rows, "SlotCache: one token count per row");
  if (first + rows > static_cast<int64_t>(lengths_.size())) lengths_.resize(static_cast<size_t>(first + rows), 0);
  step_tokens_.assign(static_cast<size_t>(rows), step_length);
  int64_t longest = 0;
  for (int64_t b = 0; b < rows; ++b) {
    longest = std::max(longest, lengths_[static_cast<size_t>(first + b)]);
    if (!tokens.empty()) {
      TORCH_CHECK(tokens[static_cast<size_t>(b)] >= 1 && tokens[static_cast<size_t>(b)] <= step_length, "SlotCache: a row's tokens must be 1..L");
      step_tokens_[static_cast<size_t>(b)] = tokens[static_cast<size_t>(b)];
    }
  }
  // A one-token step writes each row at its own length. A longer one writes every row at the
  // longest length, the causal rule's place for query i (T - L + i); a row's padding and, for a
  // shorter slot, the gap before its tokens are masked, and end_step moves its entries down.
  const int64_t total = longest + step_length;
  TORCH_CHECK(total <= max_positions_, "position beyond max_position_embeddings (", max_positions_, ")");
  reserve(first + rows, total);
  torch::Tensor positions = torch::empty({rows, step_length}, torch::kInt64);
  torch::Tensor key_mask = torch::zeros({rows, total}, torch::kBool);
  auto positions_a = positions.accessor<int64_t, 2>();
  auto mask_a = key_mask.accessor<bool, 2>();
  step_at_.resize(static_cast<size_t>(rows));
  for (int64_t b = 0; b < rows; ++b) {
    const int64_t length = lengths_[static_cast<size_t>(first + b)], real = step_tokens_[static_cast<size_t>(b)];
    const int64_t padding = step_length - real, at = step_length == 1 ? length : longest + padding;
    step_at_[static_cast<size_t>(b)] = at;
    for (int64_t i = 0; i < step_length; ++i) positions_a[b][i] = length + std::max<int64_t>(i - padding, 0);
    for (int64_t j = 0; j < length; ++j) mask_a[b][j] = true;
    for (int64_t j = at; j < at + real; ++j) mask_a[b][j] = true;
  }
  step_first_ = first;
  step_rows_ = rows;
  step_length_ = step_length;
  step_total_ = total;
  const torch::Device device = options_.device();
  return {positions.to(device), key_mask.to(device)};
}

std::pair<torch::Tensor, torch::Tensor> SlotCache::append(size_t layer, const torch::Tensor& k, const torch::Tensor& v) {
  torch::Tensor keys = storage_[static_cast<int64_t>(layer)][0], values = storage_[static_cast<int64_t>(layer)][1];  // views
  if (step_length_ == 1) {  // one scatter per layer: row b's token at index lengths[first + b] of its slot
    std::vector<int64_t> slots(static_cast<size_t>(step_rows_));
    for (int64_t b = 0; b < step_rows_; ++b) slots[static_cast<size_t>(b)] = step_first_ + b;
    const torch::Tensor slot_index = torch::tensor(slots, torch::kInt64).to(keys.device());
    const torch::Tensor at_index = torch::tensor(step_at_, torch::kInt64).to(keys.device());
    using torch::indexing::Slice;
    // Under autocast a step's keys and values come in bf16 while the cache keeps the model's dtype;
    // index_put_, unlike copy_, does not convert.
    keys.index_put_({slot_index, Slice(), at_index}, k.squeeze(2).to(keys.scalar_type()));
    values.index_put_({slot_index, Slice(), at_index}, v.squeeze(2).to(values.scalar_type()));
  } else {  // the whole step, padding first, at the longest length
    const int64_t at = step_total_ - step_length_;
    keys.narrow(0, step_first_, step_rows_).narrow(2, at, step_length_).copy_(k);
    values.narrow(0, step_first_, step_rows_).narrow(2, at, step_length_).copy_(v);
  }
  return {keys.narrow(0, step_first_, step_rows_).narrow(2, 0, step_total_),
          values.narrow(0, step_first_, step_rows_).narrow(2, 0, step_total_)};
}

void SlotCache::end_step() {
  torch::NoGradGuard no_grad;
  for (int64_t b = 0; b < step_rows_; ++b) {
    const int64_t slot = step_first_ + b, tokens = step_tokens_[static_cast<size_t>(b)];
    int64_t& length = lengths_[static_cast<size_t>(slot)];
    const int64_t at = step_at_[static_cast<size_t>(b)];
    if (at != length) entries(slot, length, tokens).copy_(entries(slot, at, tokens).clone());  // close the gap (ranges may overlap)
    length += tokens;
  }
  step_rows_ = 0;
}

RMSNormImpl::RMSNormImpl(int64_t dim, double eps) : eps_(eps) {
  weight = register_parameter("weight", torch::ones({dim}));
}

namespace {

/** cpu_kernels::rms_norm with cpu_kernels::rms_norm_backward as its gradient. */
class TrainableRmsNorm : public torch::autograd::Function<TrainableRmsNorm> {
 public:
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& x, const torch::Tensor& weight, double eps) {
    ctx->save_for_backward({x, weight});
    ctx->saved_data["eps"] = eps;
    return cpu_kernels::rms_norm(x, weight, eps);
  }
  static torch::autograd::tensor_list backward(torch::autograd::AutogradContext* ctx, torch::autograd::tensor_list grads) {
    const torch::autograd::variable_list saved = ctx->get_saved_variables();
    auto [grad_x, grad_weight] = cpu_kernels::rms_norm_backward(saved[0], saved[1], grads[0], ctx->saved_data["eps"].toDouble());
    return {grad_x, grad_weight, torch::Tensor()};
  }
};

}  // namespace

torch::Tensor RMSNormImpl::forward(const torch::Tensor& x) {
  if (cpu_kernels::supports(x)) {
    return torch::GradMode::is_enabled() ? TrainableRmsNorm::apply(x, weight, eps_) : cpu_kernels::rms_norm(x, weight, eps_);
  }
  const torch::Tensor x32 = x.to(torch::kFloat32);
  const torch::Tensor normed = x32 * torch::rsqrt(x32.pow(2).mean(-1, true) + eps_);
  return normed.to(x.scalar_type()) * weight;
}

Qwen2AttentionImpl::Qwen2AttentionImpl(const ModelConfig& config)
    : heads_(config.num_attention_heads), kv_heads_(config.num_key_value_heads), head_dim_(config.head_dim()) {
  const int64_t h = config.hidden_size;
  q_proj = register_module("q_proj", torch::nn::Linear(torch::nn::LinearOptions(h, heads_ * head_dim_).bias(true)));
  k_proj = register_module("k_proj", torch::nn::Linear(torch::nn::LinearOptions(h, kv_heads_ * head_dim_).bias(true)));
  v_proj = register_module("v_proj", torch::nn::Linear(torch::nn::LinearOptions(h, kv_heads_ * head_dim_).bias(true)));
  o_proj = register_module("o_proj", torch::nn::Linear(torch::nn::LinearOptions(heads_ * head_dim_, h).bias(false)));
}

namespace {

/** Views of qkv [B, T, H + 2 KV, D] as the attention kernels read them: q of the last `length`
 *  positions [B, length, H, D], k and v [B, KV, T, D]. */
std::tuple<torch::Tensor, torch::Tensor, torch::Tensor> split_qkv(const torch::Tensor& qkv, int64_t heads, int64_t kv_heads,
                                                                  int64_t length) {
  return {qkv.narrow(2, 0, heads).narrow(1, qkv.size(1) - length, length), qkv.narrow(2, heads, kv_heads).transpose(1, 2),
          qkv.narrow(2, heads + kv_heads, kv_heads).transpose(1, 2)};
}

/**
 * Attention from the stacked product qkv: q and k rotated in one copy of it, which the kernels read
 * in place. The backward writes q's, k's and v's gradients into one tensor shaped like qkv and
 * rotates its q and k parts back, by -sin (RoPE's sin table repeats across a head's two halves).
 */
class TrainableAttention : public torch::autograd::Function<TrainableAttention> {
 public:
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& qkv, const torch::Tensor& cos,
                               const torch::Tensor& sin, const torch::Tensor& key_mask, int64_t heads, int64_t kv_heads,
                               int64_t length) {
    torch::Tensor rotated = qkv.clone(torch::MemoryFormat::Contiguous);
    cpu_kernels::rotate_(rotated.narrow(2, 0, heads + kv_heads), cos, sin);
    ctx->save_for_backward({rotated, cos, sin, key_mask});
    ctx->saved_data["heads"] = heads;
    ctx->saved_data["kv_heads"] = kv_heads;
    ctx->saved_data["length"] = length;
    const auto [q, k, v] = split_qkv(rotated, heads, kv_heads, length);
    return cpu_kernels::attention(q, k, v, key_mask);
  }
  static torch::autograd::tensor_list backward(torch::autograd::AutogradContext* ctx, torch::autograd::tensor_list grads) {
    const torch::autograd::variable_list saved = ctx->get_saved_variables();
    const torch::Tensor &rotated = saved[0], &cos = saved[1], &sin = saved[2], &key_mask = saved[3];
    const int64_t heads = ctx->saved_data["heads"].toInt(), kv_heads = ctx->saved_data["kv_heads"].toInt();
    const int64_t length = ctx->saved_data["length"].toInt(), steps = rotated.size(1);
    torch::Tensor grad = torch::empty_like(rotated);
    grad.narrow(1, 0, steps - length).narrow(2, 0, heads).zero_();  // positions that query nothing
    const auto [q, k, v] = split_qkv(rotated, heads, kv_heads, length);
    const auto [grad_q, grad_k, grad_v] = split_qkv(grad, heads, kv_heads, length);
    cpu_kernels::attention_backward(q, k, v, key_mask, grads[0].contiguous(), grad_q, grad_k, grad_v);
    cpu_kernels::rotate_(grad.narrow(2, 0, heads + kv_heads), cos, sin.neg());
    return {grad, torch::Tensor(), torch::Tensor(), torch::Tensor(), torch::Tensor(), torch::Tensor(), torch::Tensor()};
  }
};

}  // namespace

torch::Tensor trainable_attention(const torch::Tensor& qkv, const torch::Tensor& cos, const torch::Tensor& sin,
                                  const torch::Tensor& key_mask, int64_t heads, int64_t kv_heads, int64_t length) {
  return TrainableAttention::apply(qkv, cos, sin, key_mask, heads, kv_heads, length);
}

torch::Tensor additive_mask(const torch::Tensor& key_mask, int64_t past, int64_t heads, torch::ScalarType dtype) {
  const int64_t batch = key_mask.size(0), total = key_mask.size(1), length = total - past;
  const auto options = torch::TensorOptions().device(key_mask.device());
  const torch::Tensor query_index = torch::arange(past, total, options.dtype(torch::kInt64)).view({length, 1});
  const torch::Tensor key_index = torch::arange(total, options.dtype(torch::kInt64)).view({1, total});
  const torch::Tensor allowed = (key_index <= query_index).unsqueeze(0).unsqueeze(0) & key_mask.view({batch, 1, 1, total});
  return torch::zeros({batch, heads, length, total}, options.dtype(dtype))
      .masked_fill(allowed.logical_not(), std::numeric_limits<float>::lowest())
      .view({batch * heads, length, total});
}

torch::Tensor masked_attention(const torch::Tensor& q, torch::Tensor k, torch::Tensor v, const torch::Tensor& additive) {
  const int64_t batch = q.size(0), heads = q.size(1), length = q.size(2), dim = q.size(3);
  if (k.size(1) != heads) {
    k = k.repeat_interleave(heads / k.size(1), 1);
    v = v.repeat_interleave(heads / v.size(1), 1);
  }
  // One batched product per step over batch x heads, the scale and the mask folded into it:
  // the [B*H, L, T] scores are written once and read once by the softmax.
  const int64_t total = k.size(2);
  const torch::Tensor scores = torch::baddbmm(additive, q.reshape({batch * heads, length, dim}),
                                              k.reshape({batch * heads, total, dim}).transpose(1, 2), 1.0,
                                              1.0 / std::sqrt(static_cast<double>(dim)));
  const torch::Tensor probs = torch::softmax(scores, -1, torch::kFloat32).to(q.scalar_type());
  return torch::bmm(probs, v.reshape({batch * heads, total, dim})).view({batch, heads, length, dim}).transpose(1, 2).reshape({batch, length, heads * dim});
}

namespace {

/** The rows [B * H, length, T] of an additive mask [B * H, L, T] that belong to its last `length` queries. */
torch::Tensor query_rows(const torch::Tensor& additive, int64_t batch, int64_t length) {
  const int64_t steps = additive.size(1);
  if (length == steps) return additive;
  return additive.view({batch, -1, steps, additive.size(2)}).narrow(2, steps - length, length).reshape({-1, length, additive.size(2)});
}

torch::Tensor rotate_half(const torch::Tensor& x) {
  const int64_t half = x.size(-1) / 2;
  return torch::cat({-x.narrow(-1, half, half), x.narrow(-1, 0, half)}, -1);
}

}  // namespace

torch::Tensor Qwen2AttentionImpl::forward(const torch::Tensor& x, const torch::Tensor& residual_in, const torch::Tensor& cos,
                                          const torch::Tensor& sin, const AttentionMask& mask, KVStore* cache, size_t layer,
                                          int64_t queries) {
  const int64_t batch = x.size(0), steps = x.size(1);
  const int64_t length = queries > 0 && queries < steps ? queries : steps;  // the querying positions: the last `length`
  const torch::Tensor residual = residual_in.narrow(1, steps - length, length);
  // Float32 on the CPU: the fused kernels, q, k and v from one stacked product whose columns are
  // views of its rows; under autograd the kernels with their backward. Elsewhere torch's expressions.
  if (cpu_kernels::supports(x) && !mask.additive.defined()) {
    const auto [weight, bias] = qkv_->get({q_proj, k_proj, v_proj});
    const torch::Tensor qkv = torch::addmm(bias, x.reshape({batch * steps, x.size(2)}), weight.t())
                                  .view({batch, steps, heads_ + 2 * kv_heads_, head_dim_});
    torch::Tensor out;
    if (torch::GradMode::is_enabled()) {
      TORCH_CHECK(!cache, "the CPU kernels train without a KV cache");
      out = trainable_attention(qkv, cos, sin, mask.key_mask, heads_, kv_heads_, length);
    } else {  // rotated in place
      cpu_kernels::rotate_(qkv.narrow(2, 0, heads_ + kv_heads_), cos, sin);
      auto [q, k, v] = split_qkv(qkv, heads_, kv_heads_, length);
      if (cache) std::tie(k, v) = cache->append(layer, k, v);
      out = cpu_kernels::attention(q, k, v, mask.key_mask);
    }
    return torch::addmm(residual.reshape({batch * length, -1}), out.view({batch * length, -1}), o_proj->weight.t())
        .view(residual.sizes());
  }
  const torch::Tensor x_queries = x.narrow(1, steps - length, length);
  torch::Tensor q = q_proj(x_queries).view({batch, length, heads_, head_dim_}).transpose(1, 2);
  torch::Tensor k = k_proj(x).view({batch, steps, kv_heads_, head_dim_}).transpose(1, 2);
  torch::Tensor v = v_proj(x).view({batch, steps, kv_heads_, head_dim_}).transpose(1, 2);
  q = q * cos.narrow(2, steps - length, length) + rotate_half(q) * sin.narrow(2, steps - length, length);  // cos/sin: [B, 1, L, D]
  k = k * cos + rotate_half(k) * sin;
  if (cache) std::tie(k, v) = cache->append(layer, k, v);
  return residual + o_proj(masked_attention(q, k, v, query_rows(mask.additive, batch, length)));
}

Qwen2MLPImpl::Qwen2MLPImpl(const ModelConfig& config) {
  const int64_t h = config.hidden_size, m = config.intermediate_size;
  gate_proj = register_module("gate_proj", torch::nn::Linear(torch::nn::LinearOptions(h, m).bias(false)));
  up_proj = register_module("up_proj", torch::nn::Linear(torch::nn::LinearOptions(h, m).bias(false)));
  down_proj = register_module("down_proj", torch::nn::Linear(torch::nn::LinearOptions(m, h).bias(false)));
}

namespace {

/** Rows per chunk of the MLP's products: few enough that a chunk's [rows, 2m] gate and up product
 *  stays in cache between them (for the tiny preset about 15% off the forward, and 1 MiB rather
 *  than 2 another 4% off the update), or the whole batch where such a chunk would be under 256
 *  rows (wide MLPs). */
int64_t mlp_chunk_rows(int64_t rows, int64_t gate_up_width) {
  constexpr int64_t kCachedBytes = int64_t{1} << 20, kMinChunkRows = 256;
  const int64_t cached_rows = kCachedBytes / (gate_up_width * int64_t{sizeof(float)});
  return cached_rows >= kMinChunkRows ? cached_rows : std::max<int64_t>(rows, 1);
}

/** residual + silu_gate(x gate_up^T) down^T, chunk by chunk of rows; `kept` [rows, 2m], where
 *  given, receives the gate and up product (the backward's input). */
torch::Tensor mlp_chunks(const torch::Tensor& x, const torch::Tensor& residual, const torch::Tensor& gate_up,
                         const torch::Tensor& down, torch::Tensor* kept) {
  torch::Tensor out = torch::empty_like(residual);
  const int64_t rows = x.size(0), chunk = mlp_chunk_rows(rows, gate_up.size(0));
  for (int64_t first = 0; first < rows; first += chunk) {
    const int64_t n = std::min(chunk, rows - first);
    torch::Tensor product;
    if (kept) {
      product = kept->narrow(0, first, n);
      torch::mm_out(product, x.narrow(0, first, n), gate_up.t());
    } else {
      product = torch::mm(x.narrow(0, first, n), gate_up.t());
    }
    torch::Tensor part = out.narrow(0, first, n);
    torch::addmm_out(part, residual.narrow(0, first, n), cpu_kernels::silu_gate(product), down.t());
  }
  return out;
}

/** mlp_chunks under autograd: the backward goes chunk by chunk too, the gate's activation computed
 *  again from the kept product rather than stored. */
class TrainableMlp : public torch::autograd::Function<TrainableMlp> {
 public:
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& x, const torch::Tensor& residual,
                               const torch::Tensor& gate_up, const torch::Tensor& down) {
    torch::Tensor kept = torch::empty({x.size(0), gate_up.size(0)}, x.options());
    torch::Tensor out = mlp_chunks(x, residual, gate_up, down, &kept);
    ctx->save_for_backward({x, gate_up, down, kept});
    return out;
  }
  static torch::autograd::tensor_list backward(torch::autograd::AutogradContext* ctx, torch::autograd::tensor_list grads) {
    const torch::autograd::variable_list saved = ctx->get_saved_variables();
    const torch::Tensor &x = saved[0], &gate_up = saved[1], &down = saved[2], &kept = saved[3];
    const torch::Tensor grad_out = grads[0].contiguous();
    torch::Tensor grad_x = torch::empty_like(x), grad_gate_up = torch::zeros_like(gate_up), grad_down = torch::zeros_like(down);
    const int64_t rows = x.size(0), chunk = mlp_chunk_rows(rows, gate_up.size(0));
    for (int64_t first = 0; first < rows; first += chunk) {
      const int64_t n = std::min(chunk, rows - first);
      const torch::Tensor g = grad_out.narrow(0, first, n), product = kept.narrow(0, first, n), x_part = x.narrow(0, first, n);
      grad_down.addmm_(g.t(), cpu_kernels::silu_gate(product));
      const torch::Tensor grad_product = cpu_kernels::silu_gate_backward(product, torch::mm(g, down));
      grad_gate_up.addmm_(grad_product.t(), x_part);
      torch::Tensor grad_x_part = grad_x.narrow(0, first, n);
      torch::mm_out(grad_x_part, grad_product, gate_up);
    }
    return {grad_x, grads[0], grad_gate_up, grad_down};
  }
};

}  // namespace

torch::Tensor Qwen2MLPImpl::forward(const torch::Tensor& x, const torch::Tensor& residual) {
  if (cpu_kernels::supports(x)) {
    const torch::Tensor gate_up = gate_up_->get({gate_proj, up_proj}).first;
    const torch::Tensor rows = x.reshape({-1, x.size(-1)}), residual_rows = residual.reshape({-1, residual.size(-1)});
    const torch::Tensor out = torch::GradMode::is_enabled() ? TrainableMlp::apply(rows, residual_rows, gate_up, down_proj->weight)
                                                            : mlp_chunks(rows, residual_rows, gate_up, down_proj->weight, nullptr);
    return out.view(residual.sizes());
  }
  return residual + down_proj(torch::silu(gate_proj(x)) * up_proj(x));
}

Qwen2DecoderLayerImpl::Qwen2DecoderLayerImpl(const ModelConfig& config) {
  self_attn = register_module("self_attn", Qwen2Attention(config));
  mlp = register_module("mlp", Qwen2MLP(config));
  input_layernorm = register_module("input_layernorm", RMSNorm(config.hidden_size, config.rms_norm_eps));
  post_attention_layernorm = register_module("post_attention_layernorm", RMSNorm(config.hidden_size, config.rms_norm_eps));
}

torch::Tensor Qwen2DecoderLayerImpl::forward(const torch::Tensor& h, const torch::Tensor& cos, const torch::Tensor& sin,
                                             const AttentionMask& mask, KVStore* cache, size_t layer, int64_t queries) {
  const torch::Tensor out = self_attn(input_layernorm(h), h, cos, sin, mask, cache, layer, queries);
  return mlp(post_attention_layernorm(out), out);
}

Qwen2TrunkImpl::Qwen2TrunkImpl(const ModelConfig& config) {
  embed_tokens = register_module("embed_tokens", torch::nn::Embedding(config.vocab_size, config.hidden_size));
  layers = register_module("layers", torch::nn::ModuleList());
  for (int i = 0; i < config.num_hidden_layers; ++i) layers->push_back(Qwen2DecoderLayer(config));
  norm = register_module("norm", RMSNorm(config.hidden_size, config.rms_norm_eps));
}

Qwen2ModelImpl::Qwen2ModelImpl(const ModelConfig& config, bool with_value_head) : config_(config) {
  model = register_module("model", Qwen2Trunk(config));
  if (!config.tie_word_embeddings) {
    lm_head = register_module("lm_head", torch::nn::Linear(torch::nn::LinearOptions(config.hidden_size, config.vocab_size).bias(false)));
  }
  if (with_value_head) value_head = register_module("value_head", torch::nn::Linear(config.hidden_size, 1));
  // HF's init: N(0, initializer_range) for every Linear and the embedding, zero biases, unit norms.
  torch::NoGradGuard no_grad;
  for (auto& item : named_parameters()) {
    const std::string& name = item.key();
    torch::Tensor& param = item.value();
    if (name.ends_with("layernorm.weight") || name.ends_with("norm.weight")) {
      param.fill_(1.0);
    } else if (name.ends_with(".bias")) {
      param.zero_();
    } else {
      param.normal_(0.0, config.initializer_range);
    }
  }
  const int64_t dim = config.head_dim();
  const torch::Tensor inv_freq =
      1.0 / torch::pow(config.rope_theta, torch::arange(0, dim, 2, torch::kInt64).to(torch::kFloat32) / dim);
  const torch::Tensor t = torch::arange(config.max_position_embeddings, torch::kInt64).to(torch::kFloat32);
  const torch::Tensor freqs = torch::outer(t, inv_freq);
  const torch::Tensor emb = torch::cat({freqs, freqs}, -1);
  cos_table_ = register_buffer("rope_cos", emb.cos());
  sin_table_ = register_buffer("rope_sin", emb.sin());
}

namespace {

/** bf16 autocast on CUDA for a model whose dtype (config.json's torch_dtype) is bfloat16: weights
 *  stay float32 (the optimiser's master copy), matmuls run in bf16, as PyTorch's autocast does. The
 *  CPU keeps float32 throughout (its fused kernels and golden figures are float32). Autocast state
 *  is per thread, so the guard sits where each forward runs. */
class Autocast {
 public:
  Autocast(const ModelConfig& config, const torch::Device& device)
      : on_(device.is_cuda() && config.torch_dtype == "bfloat16") {
    if (!on_) return;
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 4)
    was_enabled_ = at::autocast::is_autocast_enabled(at::kCUDA);
    was_dtype_ = at::autocast::get_autocast_dtype(at::kCUDA);
    at::autocast::set_autocast_enabled(at::kCUDA, true);
    at::autocast::set_autocast_dtype(at::kCUDA, at::kBFloat16);
#else
    was_enabled_ = at::autocast::is_enabled();
    was_dtype_ = at::autocast::get_autocast_gpu_dtype();
    at::autocast::set_enabled(true);
    at::autocast::set_autocast_gpu_dtype(at::kBFloat16);
#endif
    at::autocast::increment_nesting();
  }
  ~Autocast() {
    if (!on_) return;
    if (at::autocast::decrement_nesting() == 0) at::autocast::clear_cache();
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 4)
    at::autocast::set_autocast_enabled(at::kCUDA, was_enabled_);
    at::autocast::set_autocast_dtype(at::kCUDA, was_dtype_);
#else
    at::autocast::set_enabled(was_enabled_);
    at::autocast::set_autocast_gpu_dtype(was_dtype_);
#endif
  }
  Autocast(const Autocast&) = delete;
  Autocast& operator=(const Autocast&) = delete;

 private:
  bool on_;
  bool was_enabled_ = false;
  at::ScalarType was_dtype_ = at::kBFloat16;
};

}  // namespace

torch::Tensor Qwen2ModelImpl::forward(const torch::Tensor& ids, const torch::Tensor& positions,
                                      const torch::Tensor& key_mask, KVCache* cache, int64_t keep_last) {
  return run(ids, positions, key_mask, cache ? cache->length() : 0, cache, keep_last);
}

torch::Tensor Qwen2ModelImpl::forward(const torch::Tensor& ids, SlotCache& cache, int64_t first_slot, const std::vector<int64_t>& tokens,
                                      int64_t keep_last) {
  const auto [positions, key_mask] = cache.begin_step(first_slot, ids.size(0), ids.size(1), tokens);
  torch::Tensor hidden = run(ids, positions, key_mask, key_mask.size(1) - ids.size(1), &cache, keep_last);
  cache.end_step();
  return hidden;
}

torch::Tensor Qwen2ModelImpl::run(const torch::Tensor& ids, const torch::Tensor& positions, const torch::Tensor& key_mask,
                                  int64_t past, KVStore* cache, int64_t keep_last) {
  const int64_t batch = ids.size(0), length = ids.size(1);
  const int64_t total = past + length;
  TORCH_CHECK(key_mask.size(0) == batch && key_mask.size(1) == total, "key_mask must be [batch, cached + length]");
  TORCH_CHECK(positions.max().item<int64_t>() < config_.max_position_embeddings,
              "position beyond max_position_embeddings (", config_.max_position_embeddings, ")");
  const Autocast autocast(config_, ids.device());
  torch::Tensor h = model->embed_tokens(ids);
  const torch::Tensor cos = cos_table_.index({positions}).unsqueeze(1).to(h.scalar_type());
  const torch::Tensor sin = sin_table_.index({positions}).unsqueeze(1).to(h.scalar_type());
  // Query i (absolute index past + i) sees key j <= past + i that is a real token. The fused CPU
  // kernels read that rule from key_mask; the torch path needs it spelt out per head.
  AttentionMask mask{key_mask, {}};
  if (!cpu_kernels::supports(h)) mask.additive = additive_mask(key_mask, past, config_.num_attention_heads, h.scalar_type());
  const size_t layers = model->layers->size();
  for (size_t i = 0; i < layers; ++i) {
    h = model->layers[i]->as<Qwen2DecoderLayerImpl>()->forward(h, cos, sin, mask, cache, i, i + 1 == layers ? keep_last : 0);
  }
  return model->norm(h).to(model->norm->weight.scalar_type());  // autocast may leave it in bf16
}

torch::Tensor Qwen2ModelImpl::logits(const torch::Tensor& hidden) {
  const torch::Tensor weight = lm_head.is_empty() ? model->embed_tokens->weight : lm_head->weight;
  const Autocast autocast(config_, hidden.device());  // the largest matmul of a small model
  return torch::matmul(hidden, weight.t()).to(torch::kFloat32);
}

torch::Tensor Qwen2ModelImpl::values(const torch::Tensor& hidden) {
  TORCH_CHECK(!value_head.is_empty(), "this model has no value head");
  const Autocast autocast(config_, hidden.device());
  return value_head(hidden).squeeze(-1).to(torch::kFloat32);
}

namespace {

torch::ScalarType to_scalar_type(DType dtype) {
  switch (dtype) {
    case DType::kF32:
      return torch::kFloat32;
    case DType::kF16:
      return torch::kFloat16;
    case DType::kBF16:
      return torch::kBFloat16;
  }
  return torch::kFloat32;
}

}  // namespace

void Qwen2ModelImpl::load_weights(const std::vector<const SafetensorsFile*>& files) {
  torch::NoGradGuard no_grad;
  for (auto& item : named_parameters()) {
    const std::string& name = item.key();
    torch::Tensor& param = item.value();
    const SafetensorsFile* file = nullptr;
    for (const auto* candidate : files) {
      if (candidate->contains(name)) file = candidate;
    }
    if (!file) {
      if (name.rfind("value_head.", 0) == 0) continue;  // a critic starting from a policy folder
      throw std::runtime_error((files.empty() ? std::string("model") : files.front()->path()) + ": missing tensor '" + name + "'");
    }
    const TensorView& view = file->at(name);
    if (view.shape != param.sizes().vec()) {
      std::string expected, got;
      for (auto d : param.sizes()) expected += std::to_string(d) + " ";
      for (auto d : view.shape) got += std::to_string(d) + " ";
      throw std::runtime_error(file->path() + ": tensor '" + name + "' has shape [ " + got + "], expected [ " + expected + "]");
    }
    const torch::Tensor source = torch::from_blob(const_cast<uint8_t*>(view.data), view.shape, to_scalar_type(view.dtype));
    // A diverged run's NaN/Inf weights would act and train silently as garbage: refuse them here.
    if (!torch::isfinite(source).all().item<bool>()) {
      throw std::runtime_error(file->path() + ": tensor '" + name + "' holds NaN or Inf values");
    }
    param.copy_(source.to(param.scalar_type()));
  }
}

std::vector<TensorToWrite> Qwen2ModelImpl::weights_to_write() const {
  std::vector<TensorToWrite> out;
  for (const auto& item : named_parameters()) {
    const std::string& name = item.key();
    const torch::Tensor& param = item.value();
    const torch::Tensor cpu = param.detach().to(torch::kCPU, torch::kFloat32).contiguous();
    TensorToWrite tensor;
    tensor.name = name;
    tensor.shape = cpu.sizes().vec();
    const auto* bytes = static_cast<const uint8_t*>(cpu.data_ptr());
    tensor.data.assign(bytes, bytes + cpu.numel() * sizeof(float));
    out.push_back(std::move(tensor));
  }
  return out;
}

Qwen2Model load_qwen2(const std::string& dir, bool value_head, const torch::Device& device) {
  const ModelConfig config = ModelConfig::load(dir + "/config.json");
  Qwen2Model model(config, value_head);
  std::vector<SafetensorsFile> files;
  const std::string single = dir + "/model.safetensors", index = dir + "/model.safetensors.index.json";
  if (std::filesystem::exists(single)) {
    files.push_back(SafetensorsFile::load(single));
  } else if (std::filesystem::exists(index)) {
    std::ifstream in(index);
    nlohmann::json json = nlohmann::json::parse(in, nullptr, false);
    if (!json.is_object() || !json.contains("weight_map") || !json["weight_map"].is_object()) {
      throw std::runtime_error(index + ": needs a weight_map object");
    }
    std::set<std::string> shards;
    for (const auto& [name, shard] : json["weight_map"].items()) shards.insert(shard.get<std::string>());
    for (const auto& shard : shards) {
      if (shard.find('/') != std::string::npos) throw std::runtime_error(index + ": shard name '" + shard + "' must be a plain file name");
      files.push_back(SafetensorsFile::load(dir + "/" + shard));
    }
  } else {
    throw std::runtime_error(dir + ": no model.safetensors or model.safetensors.index.json");
  }
  std::vector<const SafetensorsFile*> pointers;
  for (const auto& file : files) pointers.push_back(&file);
  model->load_weights(pointers);
  model->to(device);
  return model;
}

void save_qwen2(Qwen2Model& model, const std::string& dir, const std::string& tokenizer_dir) {
  std::filesystem::create_directories(dir);
  // torch_dtype stays the model's (bfloat16: autocast on CUDA); the weights are written float32 either way.
  nlohmann::json config = model->config().to_json();
  const std::string config_path = dir + "/config.json";
  {
    std::ofstream out(config_path + ".tmp");
    out << config.dump(2) << "\n";
    if (!out.flush()) throw std::runtime_error(config_path + ": write failed");
  }
  std::filesystem::rename(config_path + ".tmp", config_path);
  write_safetensors(dir + "/model.safetensors", model->weights_to_write());
  if (!tokenizer_dir.empty()) copy_tokenizer_files(tokenizer_dir, dir);
}

torch::Tensor token_logprobs(const torch::Tensor& logits, const torch::Tensor& targets) {
  return torch::log_softmax(logits, -1).gather(-1, targets.unsqueeze(-1)).squeeze(-1);
}

}  // namespace turnrl::agents
