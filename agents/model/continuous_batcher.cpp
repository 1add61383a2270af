#include "agents/model/continuous_batcher.h"

#include <algorithm>
#include <chrono>
#include <deque>
#include <optional>
#include <random>
#include <stdexcept>

#include "agents/model/generation.h"
#include "agents/model/prefix_cache.h"
#include "agents/model/qwen2_model.h"

namespace turnrl::agents {
namespace {

/** Padded tokens of one prefill pass at most (its activations' size); a longer prompt goes alone. */
constexpr int64_t kPrefillTokens = 8192;
/** A prefill group's padded tokens at most this many times its real ones: a prompt whose prefix
 *  is cached prefills a few tokens, one that is not hundreds, and padding one to the other wastes
 *  the difference. */
constexpr double kPaddingSlack = 1.25;

/** Length of the longest tail of `text` that begins one of `stops` (it may still become a stop). */
size_t stop_prefix_tail(const std::string& text, const std::vector<std::string>& stops) {
  size_t tail = 0;
  for (const std::string& stop : stops) {
    for (size_t k = std::min(stop.size() - 1, text.size()); k > tail; --k) {
      if (text.compare(text.size() - k, k, stop, 0, k) == 0) {
        tail = k;
        break;
      }
    }
  }
  return tail;
}

}  // namespace

struct ContinuousBatcher::Impl {
  struct Sequence {
    GenerationRequest request;
    std::mt19937_64 rng;
    std::vector<int32_t> allowed;  // the request's own candidates (empty: the whole vocabulary)
    int max_new_tokens = 0;
    std::unique_ptr<StreamingDecoder> decoder;  // (holds a reference: not assignable in place)
    size_t emitted = 0;  // bytes of result.text passed to on_text
    GenerationResult result;
  };

  Impl(LanguageModel& model, int max_batch, uint64_t prefix_cache_bytes)
      : model(model), module(model.module()), max_batch(max_batch),
        cache(module->config(), module->parameters().front().options().requires_grad(false)),
        vocabulary(sampling_candidates({}, module->config().vocab_size)) {
    if (max_batch < 1) throw std::invalid_argument("continuous batching: max_batch must be >= 1");
    if (prefix_cache_bytes > 0) {
      const uint64_t element = static_cast<uint64_t>(module->parameters().front().element_size());
      prefix_cache = std::make_unique<PrefixCache>(prefix_cache_bytes, kv_bytes_per_token(module->config(), element));
    }
  }

  /** Records a sampled token; returns true when the sequence is finished. */
  bool accept(Sequence& sequence, int32_t token, float logprob) {
    GenerationResult& result = sequence.result;
    result.generation.ids.push_back(token);
    result.generation.logprobs.push_back(logprob);
    const std::vector<int32_t>& stops = model.stop_ids();
    if (std::find(stops.begin(), stops.end(), token) != stops.end()) {
      result.generation.stopped = true;
      return finish(sequence, "stop");
    }
    const std::vector<std::string>& stop_strings = sequence.request.stop;
    if (sequence.decoder) {
      const size_t before = result.text.size();
      result.text += sequence.decoder->push(token);
      size_t longest = 0;
      for (const std::string& stop : stop_strings) longest = std::max(longest, stop.size());
      const size_t from = before >= longest ? before - longest + 1 : 0;
      size_t found = std::string::npos;
      for (const std::string& stop : stop_strings) found = std::min(found, result.text.find(stop, from));
      if (found != std::string::npos) {
        result.text.resize(found);
        return finish(sequence, "stop");
      }
    }
    if (static_cast<int>(result.generation.ids.size()) >= sequence.max_new_tokens) return finish(sequence, "length");
    if (sequence.request.on_text) {
      const size_t ready = result.text.size() - stop_prefix_tail(result.text, stop_strings);
      if (ready > sequence.emitted) {
        const bool go_on = sequence.request.on_text(result.text.substr(sequence.emitted, ready - sequence.emitted));
        sequence.emitted = ready;
        if (!go_on) return finish(sequence, "cancelled");
      }
    }
    return false;
  }

  bool finish(Sequence& sequence, const char* reason) {
    GenerationResult& result = sequence.result;
    result.finish_reason = reason;
    // A stop string cut the text; otherwise the decoder's held-back bytes belong to it.
    if (sequence.decoder && !(result.finish_reason == "stop" && !result.generation.stopped)) result.text += sequence.decoder->finish();
    if (sequence.request.on_text && result.finish_reason != "cancelled" && result.text.size() > sequence.emitted) {
      sequence.request.on_text(result.text.substr(sequence.emitted));
      sequence.emitted = result.text.size();
    }
    return true;
  }

  std::pair<int32_t, float> sample(Sequence& sequence, const float* logits) {
    const std::vector<int32_t>& candidates = sequence.allowed.empty() ? vocabulary : sequence.allowed;
    return sample_token(logits, candidates, sequence.request.params, sequence.rng, weight, order);
  }

  static void fail(Sequence& sequence, const std::exception_ptr& error, std::vector<Sequence>& done) {
    sequence.result.error = error;
    done.push_back(std::move(sequence));
  }

  /** Tokens of `sequence`'s prompt the prefix cache holds (at most all but the last, whose logits
   *  sample the first reply token). */
  int64_t cached_prefix(const Sequence& sequence) const {
    if (!prefix_cache) return 0;
    const std::vector<int32_t>& prompt = sequence.request.prompt;
    return std::min(prefix_cache->match(prompt), static_cast<int64_t>(prompt.size()) - 1);
  }

  /** Orders the next `count` waiting requests by the tokens they prefill, so that groups pad little
   *  (when they start does not change a reply); returns their cached prefixes, in the new order. */
  std::vector<int64_t> sort_waiting(size_t count) {
    struct Key {
      int64_t prefill, cached;
      size_t place;
    };
    std::vector<Key> keys;
    for (size_t i = 0; i < count; ++i) {
      const int64_t cached = cached_prefix(waiting[i]);
      keys.push_back({static_cast<int64_t>(waiting[i].request.prompt.size()) - cached, cached, i});
    }
    std::stable_sort(keys.begin(), keys.end(), [](const Key& a, const Key& b) { return a.prefill < b.prefill; });
    std::vector<Sequence> sorted;
    std::vector<int64_t> cached;
    for (const Key& key : keys) {
      sorted.push_back(std::move(waiting[key.place]));
      cached.push_back(key.cached);
    }
    for (size_t i = 0; i < count; ++i) waiting[i] = std::move(sorted[i]);
    return cached;
  }

  /** Prefills waiting requests into free slots while the batch has room: groups of prompts of
   *  similar length in one forward pass each, each prompt after its cached prefix, left-padded to
   *  the longest rest (each row's causal keys are its own tokens only). */
  void admit(std::vector<Sequence>& done) {
    torch::NoGradGuard no_grad;
    const auto start = std::chrono::steady_clock::now();
    const int64_t context = model.context_length();
    while (!waiting.empty() && static_cast<int>(running.size()) < max_batch) {
      const int64_t first = static_cast<int64_t>(running.size());
      // The group is taken from these requests only: the batch has room for no more.
      const std::vector<int64_t> cached_of = sort_waiting(std::min(waiting.size(), static_cast<size_t>(max_batch) - running.size()));
      std::vector<int64_t> reused, lengths;  // per row: cached prefix, tokens to prefill
      int64_t longest = 0, most_reused = 0, real = 0;
      while (!waiting.empty() && static_cast<int>(running.size()) < max_batch) {
        const std::vector<int32_t>& prompt = waiting.front().request.prompt;
        const int64_t cached = cached_of[lengths.size()], length = static_cast<int64_t>(prompt.size()) - cached;
        const int64_t wider = std::max(longest, length), deeper = std::max(most_reused, cached);
        const int64_t padded = wider * static_cast<int64_t>(lengths.size() + 1);
        // The step spans the longest prefix plus the longest rest: it must fit the context.
        const bool fits = padded <= kPrefillTokens && deeper + wider <= context && padded <= kPaddingSlack * static_cast<double>(real + length);
        if (!lengths.empty() && !fits) break;
        const int64_t slot = static_cast<int64_t>(running.size());
        cache.clear(slot);
        if (prefix_cache) prefix_cache->restore(prompt, cached, cache, slot);
        longest = wider;
        most_reused = deeper;
        real += length;
        reused.push_back(cached);
        lengths.push_back(length);
        running.push_back(std::move(waiting.front()));
        waiting.pop_front();
      }
      prefill(first, reused, lengths, longest, done);
    }
    prefill_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }

  /** The forward pass of a group admitted into slots first.. (row b's prompt after its `reused[b]`
   *  cached tokens): samples each row's first token and keeps its prompt in the prefix cache. */
  void prefill(int64_t first, const std::vector<int64_t>& reused, const std::vector<int64_t>& lengths, int64_t longest,
               std::vector<Sequence>& done) {
    const int64_t rows = static_cast<int64_t>(lengths.size());
    std::vector<bool> finished(running.size(), false);
    try {
      torch::Tensor ids = torch::zeros({rows, longest}, torch::kInt64);  // padding: any id, masked
      auto ids_a = ids.accessor<int64_t, 2>();
      for (int64_t b = 0; b < rows; ++b) {
        const std::vector<int32_t>& prompt = running[static_cast<size_t>(first + b)].request.prompt;
        const int64_t from = reused[static_cast<size_t>(b)], padding = longest - lengths[static_cast<size_t>(b)];
        for (size_t t = static_cast<size_t>(from); t < prompt.size(); ++t) ids_a[b][padding + static_cast<int64_t>(t) - from] = prompt[t];
      }
      // Left-padded rows end together: the last layer computes the last position alone.
      const torch::Tensor hidden = module->forward(ids.to(device()), cache, first, lengths, 1);
      const torch::Tensor logits = module->logits(hidden.select(1, 0)).to(torch::kCPU).contiguous();
      const float* data = logits.data_ptr<float>();
      for (int64_t b = 0; b < rows; ++b) {
        Sequence& sequence = running[static_cast<size_t>(first + b)];
        prefilled_tokens += static_cast<uint64_t>(lengths[static_cast<size_t>(b)]);
        if (prefix_cache) prefix_cache->store(sequence.request.prompt, static_cast<int64_t>(sequence.request.prompt.size()), cache, first + b);
        const auto [token, logprob] = sample(sequence, data + b * logits.size(1));
        finished[static_cast<size_t>(first + b)] = accept(sequence, token, logprob);
      }
    } catch (...) {
      const std::exception_ptr error = std::current_exception();
      for (int64_t slot = first; slot < first + rows; ++slot) {
        cache.clear(slot);
        fail(running[static_cast<size_t>(slot)], error, done);
      }
      running.resize(static_cast<size_t>(first));
      return;
    }
    remove_finished(finished, done);
  }

  /** One token for every running sequence. */
  void decode(std::vector<Sequence>& done) {
    if (running.empty()) return;
    torch::NoGradGuard no_grad;
    const auto start = std::chrono::steady_clock::now();
    const int64_t batch = static_cast<int64_t>(running.size());
    std::vector<int64_t> last(static_cast<size_t>(batch));
    for (int64_t b = 0; b < batch; ++b) last[static_cast<size_t>(b)] = running[static_cast<size_t>(b)].result.generation.ids.back();
    std::vector<bool> finished(static_cast<size_t>(batch), false);
    try {
      const torch::Tensor ids = torch::tensor(last, torch::kInt64).view({batch, 1}).to(device());
      const torch::Tensor hidden = module->forward(ids, cache, 0);
      const torch::Tensor logits = module->logits(hidden.select(1, 0)).to(torch::kCPU).contiguous();
      const float* data = logits.data_ptr<float>();
      for (int64_t b = 0; b < batch; ++b) {
        Sequence& sequence = running[static_cast<size_t>(b)];
        const auto [token, logprob] = sample(sequence, data + b * logits.size(1));
        finished[static_cast<size_t>(b)] = accept(sequence, token, logprob);
      }
    } catch (...) {
      const std::exception_ptr error = std::current_exception();
      for (int64_t b = 0; b < batch; ++b) cache.clear(b);
      for (Sequence& sequence : running) fail(sequence, error, done);
      running.clear();
      return;
    }
    remove_finished(finished, done);
    decode_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }

  /** Finished sequences leave the batch, the last slot moving into each gap. */
  void remove_finished(const std::vector<bool>& finished, std::vector<Sequence>& done) {
    for (int64_t b = static_cast<int64_t>(finished.size()) - 1; b >= 0; --b) {  // from the back: the moved-in last one is never finished
      if (!finished[static_cast<size_t>(b)]) continue;
      const int64_t back = static_cast<int64_t>(running.size()) - 1;
      if (prefix_cache) keep_sequence(running[static_cast<size_t>(b)], b);
      done.push_back(std::move(running[static_cast<size_t>(b)]));
      if (b != back) {
        cache.move(back, b);
        running[static_cast<size_t>(b)] = std::move(running.back());
      } else {
        cache.clear(b);
      }
      running.pop_back();
    }
  }

  /** Keeps a finished sequence's prompt and reply in the prefix cache: the next turn's prompt of an
   *  append-only history begins with both. */
  void keep_sequence(const Sequence& sequence, int64_t slot) {
    std::vector<int32_t> tokens = sequence.request.prompt;
    const std::vector<int32_t>& reply = sequence.result.generation.ids;
    tokens.insert(tokens.end(), reply.begin(), reply.end());
    prefix_cache->store(tokens, std::min<int64_t>(cache.length(slot), static_cast<int64_t>(tokens.size())), cache, slot);
  }

  torch::Device device() const { return module->parameters().front().device(); }

  LanguageModel& model;
  Qwen2Model& module;
  int max_batch;
  SlotCache cache;
  std::unique_ptr<PrefixCache> prefix_cache;  // none: every prompt prefilled whole
  double prefill_seconds = 0.0, decode_seconds = 0.0;
  uint64_t prefilled_tokens = 0;
  std::vector<int32_t> vocabulary;
  std::deque<Sequence> waiting;
  std::vector<Sequence> running;  // running[i] decodes in cache slot i
  std::vector<double> weight;     // sampling scratch
  std::vector<int32_t> order;
};

ContinuousBatcher::ContinuousBatcher(LanguageModel& model, int max_batch, uint64_t prefix_cache_bytes)
    : impl_(std::make_unique<Impl>(model, max_batch, prefix_cache_bytes)) {}
ContinuousBatcher::~ContinuousBatcher() = default;

size_t ContinuousBatcher::waiting() const { return impl_->waiting.size(); }
size_t ContinuousBatcher::running() const { return impl_->running.size(); }

BatcherStats ContinuousBatcher::stats() const {
  BatcherStats stats;
  stats.prefill_seconds = impl_->prefill_seconds;
  stats.decode_seconds = impl_->decode_seconds;
  stats.prefilled_tokens = impl_->prefilled_tokens;
  if (impl_->prefix_cache) stats.prefix_cache = impl_->prefix_cache->stats();
  return stats;
}

void ContinuousBatcher::check(const GenerationRequest& request) const {
  const int64_t context = impl_->model.context_length(), vocab = impl_->module->config().vocab_size;
  if (request.prompt.empty()) throw std::invalid_argument("generate: the prompt is empty");
  if (static_cast<int64_t>(request.prompt.size()) >= context) {
    throw std::invalid_argument("generate: a prompt of " + std::to_string(request.prompt.size()) +
                                " tokens leaves no room for a reply in the model's context of " + std::to_string(context));
  }
  for (int32_t id : request.prompt) {
    if (id < 0 || id >= vocab) throw std::invalid_argument("generate: prompt token " + std::to_string(id) + " is outside the vocabulary");
  }
  if (request.params.max_new_tokens < 1) throw std::invalid_argument("generate: max_new_tokens must be >= 1");
  if (!request.stop.empty() && !impl_->model.has_tokenizer()) throw std::invalid_argument("generate: stop strings need a tokenizer");
  for (const std::string& stop : request.stop) {
    if (stop.empty()) throw std::invalid_argument("generate: a stop string is empty");
  }
  if (!request.on_done) throw std::invalid_argument("generate: a request needs on_done");
}

void ContinuousBatcher::add(GenerationRequest request) {
  check(request);
  Impl::Sequence sequence;
  sequence.rng.seed(request.params.seed);
  if (!request.params.allowed_tokens.empty()) {
    sequence.allowed = sampling_candidates(request.params, impl_->module->config().vocab_size);
  }
  const int64_t room = impl_->model.context_length() - static_cast<int64_t>(request.prompt.size());
  sequence.max_new_tokens = static_cast<int>(std::min<int64_t>(request.params.max_new_tokens, room));
  if (impl_->model.has_tokenizer()) sequence.decoder = std::make_unique<StreamingDecoder>(impl_->model.tokenizer());
  sequence.request = std::move(request);
  impl_->waiting.push_back(std::move(sequence));
}

void ContinuousBatcher::step() {
  std::vector<Impl::Sequence> done;
  impl_->admit(done);
  impl_->decode(done);
  // After the batch is consistent again: a callback may add requests.
  for (Impl::Sequence& sequence : done) sequence.request.on_done(std::move(sequence.result));
}

void ContinuousBatcher::fail_all(const std::exception_ptr& error) {
  std::vector<Impl::Sequence> done;
  for (Impl::Sequence& sequence : impl_->running) Impl::fail(sequence, error, done);
  for (Impl::Sequence& sequence : impl_->waiting) Impl::fail(sequence, error, done);
  for (size_t slot = 0; slot < impl_->running.size(); ++slot) impl_->cache.clear(static_cast<int64_t>(slot));
  impl_->running.clear();
  impl_->waiting.clear();
  for (Impl::Sequence& sequence : done) sequence.request.on_done(std::move(sequence.result));
}

}  // namespace turnrl::agents
