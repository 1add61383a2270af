#pragma once
// The Qwen2 decoder in libtorch, with Hugging Face parameter names, an optional scalar value head
// (the critic), and a KV cache. Include only where tensors are needed (agents, trainer).
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <torch/torch.h>

#include "agents/model/model_config.h"
#include "agents/model/safetensors.h"

namespace turnrl::agents {

/** Where a forward pass keeps the keys and values of earlier steps. */
class KVStore {
 public:
  virtual ~KVStore() = default;
  /** Keeps a step's keys and values [B, kv_heads, L, head_dim] of `layer`; returns everything the
   *  step attends to, [B, kv_heads, T, head_dim] with the step's own last. */
  virtual std::pair<torch::Tensor, torch::Tensor> append(size_t layer, const torch::Tensor& k, const torch::Tensor& v) = 0;
};

/** Keys and values of a run of tokens of one sequence: [layers, 2 (keys, values), kv_heads, tokens,
 *  head_dim], one tensor so that a run moves in one copy. */
struct KVBlock {
  torch::Tensor kv;
  int64_t tokens() const { return kv.defined() ? kv.size(3) : 0; }
};

/** Keys and values per layer, [batch, kv_heads, cached_tokens, head_dim]: every row has the same
 *  length (shorter prompts are left-padded). */
struct KVCache : KVStore {
  std::vector<torch::Tensor> keys;
  std::vector<torch::Tensor> values;
  int64_t length() const { return keys.empty() ? 0 : keys.front().size(2); }
  std::pair<torch::Tensor, torch::Tensor> append(size_t layer, const torch::Tensor& k, const torch::Tensor& v) override;
};

/**
 * One cache slot per sequence, for continuous batching: per layer [slots, kv_heads, capacity,
 * head_dim] and a length per slot. A slot's cache index is its token's position, so sequences of
 * different lengths share a decoding step without padding to the longest one. Both dimensions grow
 * on demand (geometrically, contents kept).
 */
class SlotCache : public KVStore {
 public:
  SlotCache(const ModelConfig& config, const torch::TensorOptions& options);
  /** Moves slot `from` into slot `to` (a finished sequence's place); `from` ends empty. */
  void move(int64_t from, int64_t to);
  /** Empties a slot (its sequence finished). */
  void clear(int64_t slot);
  /** Tokens cached in `slot`. */
  int64_t length(int64_t slot) const;
  /** A copy of `slot`'s cache entries [from, from + count). */
  KVBlock copy_out(int64_t slot, int64_t from, int64_t count) const;
  /** Writes the first `count` tokens of `block` at entry `at` (at most the slot's length) of `slot`,
   *  whose length becomes at + count: a cached prompt prefix restored. */
  void copy_in(int64_t slot, int64_t at, const KVBlock& block, int64_t count);

  /** Rows b of a step [B, L] continue slots first + b with `tokens[b]` real tokens each (empty: all
   *  L), left-padded to L: every row's last token is the step's last. Returns their positions [B, L]
   *  and the key mask [B, T]. Slots may differ in length: with L > 1 a shorter slot's step is written
   *  after a masked gap (the causal rule puts query i at T - L + i) and moved down to its length by
   *  end_step. */
  std::pair<torch::Tensor, torch::Tensor> begin_step(int64_t first, int64_t rows, int64_t step_length,
                                                     const std::vector<int64_t>& tokens = {});
  std::pair<torch::Tensor, torch::Tensor> append(size_t layer, const torch::Tensor& k, const torch::Tensor& v) override;
  /** The step's real tokens count as cached (padding written beyond them is masked, then overwritten). */
  void end_step();

 private:
  void reserve(int64_t slots, int64_t tokens);
  /** Entries [from, from + count) of `slot`: [layers, 2, kv_heads, count, head_dim], a view. */
  torch::Tensor entries(int64_t slot, int64_t from, int64_t count) const;

  int64_t layers_, kv_heads_, head_dim_, max_positions_;
  torch::TensorOptions options_;
  torch::Tensor storage_;  // [layers, 2 (keys, values), slots, kv_heads, capacity, head_dim]
  std::vector<int64_t> lengths_;
  int64_t step_first_ = 0, step_rows_ = 0, step_length_ = 0, step_total_ = 0;
  std::vector<int64_t> step_tokens_, step_at_;  // per row: real tokens, where the step writes them
};

/** Which keys each query sees: causal over cache indices, real tokens only. */
struct AttentionMask {
  torch::Tensor key_mask;  // [B, cached + L] bool, true for real tokens: what the fused CPU kernels read
  torch::Tensor additive;  // [B * heads, L, cached + L], 0 or lowest: the torch path; undefined when fused
};

/** Attention on the CPU kernels under autograd (float32 CPU tensors) from the stacked q/k/v product
 *  qkv [B, T, H + 2 KV, D] before rotation (cos, sin [B, 1, T, D] contiguous) to the output of its
 *  last `length` positions, [B, length, H * D]: cpu_kernels::rotate_ and attention's rule, their
 *  backward its gradient. */
torch::Tensor trainable_attention(const torch::Tensor& qkv, const torch::Tensor& cos, const torch::Tensor& sin,
                                  const torch::Tensor& key_mask, int64_t heads, int64_t kv_heads, int64_t length);

/** The rule of key_mask [B, past + L] (query i sees real key j <= past + i) spelt out per head for
 *  masked_attention: [B * heads, L, past + L], 0 where seen, the lowest float elsewhere. */
torch::Tensor additive_mask(const torch::Tensor& key_mask, int64_t past, int64_t heads, torch::ScalarType dtype);
/** Attention as torch expressions, any device and dtype: q [B, H, L, D], k and v [B, KV, T, D],
 *  additive from additive_mask; returns [B, L, H * D]. */
torch::Tensor masked_attention(const torch::Tensor& q, torch::Tensor k, torch::Tensor v, const torch::Tensor& additive);

/**
 * Weights (and biases) of projections that read the same input, stacked so that one matrix
 * product computes them all. Rebuilt when a part changes (its version counter moves: a loaded
 * checkpoint, an optimiser step), so a frozen model stacks once.
 */
class StackedProjections {
 public:
  /** [sum of outputs, input] weight and the stacked bias (undefined when the parts have none). */
  std::pair<torch::Tensor, torch::Tensor> get(const std::vector<torch::nn::Linear>& parts);

 private:
  std::mutex mutex_;
  std::vector<int64_t> versions_;
  torch::Tensor weight_, bias_;
};

class RMSNormImpl : public torch::nn::Module {
 public:
  RMSNormImpl(int64_t dim, double eps);
  torch::Tensor forward(const torch::Tensor& x);
  torch::Tensor weight;

 private:
  double eps_;
};
TORCH_MODULE(RMSNorm);

class Qwen2AttentionImpl : public torch::nn::Module {
 public:
  explicit Qwen2AttentionImpl(const ModelConfig& config);
  /** residual + attention(x): the sum comes out of the output projection's product (BLAS beta = 1).
   *  With `queries` > 0 only the last `queries` positions query (and come out): the others give
   *  their keys and values alone. */
  torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& residual, const torch::Tensor& cos,
                        const torch::Tensor& sin, const AttentionMask& mask, KVStore* cache, size_t layer, int64_t queries = 0);
  torch::nn::Linear q_proj{nullptr}, k_proj{nullptr}, v_proj{nullptr}, o_proj{nullptr};

 private:
  int64_t heads_, kv_heads_, head_dim_;
  std::shared_ptr<StackedProjections> qkv_ = std::make_shared<StackedProjections>();
};
TORCH_MODULE(Qwen2Attention);

class Qwen2MLPImpl : public torch::nn::Module {
 public:
  explicit Qwen2MLPImpl(const ModelConfig& config);
  /** residual + mlp(x), the sum likewise out of the down projection's product. */
  torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& residual);
  torch::nn::Linear gate_proj{nullptr}, up_proj{nullptr}, down_proj{nullptr};

 private:
  std::shared_ptr<StackedProjections> gate_up_ = std::make_shared<StackedProjections>();
};
TORCH_MODULE(Qwen2MLP);

class Qwen2DecoderLayerImpl : public torch::nn::Module {
 public:
  explicit Qwen2DecoderLayerImpl(const ModelConfig& config);
  /** `queries` as Qwen2Attention's: the output holds the last `queries` positions (0: all). */
  torch::Tensor forward(const torch::Tensor& h, const torch::Tensor& cos, const torch::Tensor& sin,
                        const AttentionMask& mask, KVStore* cache, size_t layer, int64_t queries = 0);
  Qwen2Attention self_attn{nullptr};
  Qwen2MLP mlp{nullptr};
  RMSNorm input_layernorm{nullptr}, post_attention_layernorm{nullptr};
};
TORCH_MODULE(Qwen2DecoderLayer);

/** The trunk: HF's `model.*` (embeddings, layers, final norm). */
class Qwen2TrunkImpl : public torch::nn::Module {
 public:
  explicit Qwen2TrunkImpl(const ModelConfig& config);
  torch::nn::Embedding embed_tokens{nullptr};
  torch::nn::ModuleList layers;
  RMSNorm norm{nullptr};
};
TORCH_MODULE(Qwen2Trunk);

/**
 * Qwen2ForCausalLM (and, with `value_head`, a critic with a scalar head on the same trunk).
 * Parameter names equal the Hugging Face state_dict names.
 */
class Qwen2ModelImpl : public torch::nn::Module {
 public:
  Qwen2ModelImpl(const ModelConfig& config, bool value_head);

  /**
   * ids, positions: [B, L] int64. key_mask: [B, cached + L] bool, true for real tokens.
   * Appends this step's keys/values to `cache` when given. Returns the final-norm hidden states [B, L, H],
   * or with `keep_last` > 0 those of the last `keep_last` positions [B, keep_last, H]: the last layer then
   * computes only their queries, attention output and MLP (the others feed it keys and values alone),
   * which is most of that layer's work where a long prompt precedes a short reply.
   */
  torch::Tensor forward(const torch::Tensor& ids, const torch::Tensor& positions, const torch::Tensor& key_mask,
                        KVCache* cache = nullptr, int64_t keep_last = 0);
  /** Ids [B, L] continuing cache slots first_slot + b, row b's last `tokens[b]` real (empty: all;
   *  see SlotCache::begin_step); appends to them. `keep_last` as above: a prefill needs its last
   *  position only. */
  torch::Tensor forward(const torch::Tensor& ids, SlotCache& cache, int64_t first_slot, const std::vector<int64_t>& tokens = {},
                        int64_t keep_last = 0);
  /** Float32 logits [B, L, V] (tied models use the embedding matrix). */
  torch::Tensor logits(const torch::Tensor& hidden);
  /** Per-token values [B, L]; requires the value head. */
  torch::Tensor values(const torch::Tensor& hidden);

  const ModelConfig& config() const { return config_; }
  bool has_value_head() const { return !value_head.is_empty(); }

  /** Copies weights from a file set; throws naming the file and tensor on a missing or misshapen one.
   *  A missing value head is initialised (a critic made from a policy folder). */
  void load_weights(const std::vector<const SafetensorsFile*>& files);
  /** Current weights as float32 tensors named as in Hugging Face folders. */
  std::vector<TensorToWrite> weights_to_write() const;

  Qwen2Trunk model{nullptr};
  torch::nn::Linear lm_head{nullptr};
  torch::nn::Linear value_head{nullptr};

 private:
  /** The layers over ids [B, L]; `past` cache entries precede the step in every row. */
  torch::Tensor run(const torch::Tensor& ids, const torch::Tensor& positions, const torch::Tensor& key_mask, int64_t past,
                    KVStore* cache, int64_t keep_last = 0);

  ModelConfig config_;
  torch::Tensor cos_table_, sin_table_;  // [max_positions, head_dim], float32
};
TORCH_MODULE(Qwen2Model);

/** Loads `dir` (config.json, model.safetensors or an index of shards) onto `device`. */
Qwen2Model load_qwen2(const std::string& dir, bool value_head, const torch::Device& device);
/** Writes config.json and model.safetensors; with `tokenizer_dir`, also its tokenizer and
 *  generation config, so `dir` is a complete Hugging Face folder every command takes. */
void save_qwen2(Qwen2Model& model, const std::string& dir, const std::string& tokenizer_dir = "");

/** Log-probabilities of `targets` [B, L] under `logits` [B, L, V] (keeps autograd). */
torch::Tensor token_logprobs(const torch::Tensor& logits, const torch::Tensor& targets);

}  // namespace turnrl::agents
