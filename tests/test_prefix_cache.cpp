// The prefix cache: replies equal the uncached engine's token for token (greedy and seeded
// sampling, append-only and re-labelled histories, requests arriving as replies finish), least
// recently used leaves evicted under the cap, restored entries equal the stored ones.
#include "torch_doctest.h"

#include <filesystem>
#include <map>

#include <unistd.h>

#include "agents/model/continuous_batcher.h"
#include "agents/model/new_model.h"
#include "agents/model/prefix_cache.h"
#include "agents/model/qwen2_model.h"

using namespace turnrl::agents;
using turnrl::memory::ChatMessage;

namespace {

std::shared_ptr<LanguageModel> tiny_model() {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / ("turnrl_test_prefix_cache_" + std::to_string(::getpid()));
  if (!std::filesystem::exists(dir / "model.safetensors")) write_new_model("tiny", dir.string(), 5, "", 0.2);  // sharper than the preset's 0.02: small errors show
  return LanguageModel::load(dir.string());
}

struct Turn {
  std::vector<int32_t> ids;
  std::vector<float> logprobs;
};

/** Episodes of `turns` turns each, every episode's next prompt submitted as its reply arrives.
 *  Append-only: each prompt extends the previous one with the reply and a new observation;
 *  otherwise the last observation is re-labelled once the next arrives (BALROG's layout). */
std::map<std::pair<int, int>, Turn> play(LanguageModel& lm, uint64_t cache_bytes, bool greedy, bool append_only, BatcherStats& stats) {
  const int episodes = 5, turns = 4;
  const std::vector<std::string> observations = {"you see a wall 2 steps forward", "a red ball 1 step left", "a grey key 3 steps right",
                                                 "a door 1 step forward", "you carry the key"};
  ContinuousBatcher batcher(lm, 3, cache_bytes);
  std::map<std::pair<int, int>, Turn> replies;
  std::vector<std::vector<ChatMessage>> chats(episodes);
  std::vector<int> pending;
  auto submit = [&](int episode) {
    const int turn = static_cast<int>(chats[static_cast<size_t>(episode)].size() / 2);
    std::vector<ChatMessage> messages = chats[static_cast<size_t>(episode)];
    if (!append_only && turn > 0) messages[messages.size() - 2].content = "Observation: " + messages[messages.size() - 2].content.substr(21);
    const std::string observation = observations[static_cast<size_t>((episode + turn) % observations.size())];
    messages.push_back({"user", "Current Observation: " + observation});
    chats[static_cast<size_t>(episode)] = messages;
    std::vector<ChatMessage> prompt = {{"system", "you are an agent in a grid world go to the red ball"}};
    prompt.insert(prompt.end(), messages.begin(), messages.end());
    GenerationRequest request;
    request.prompt = lm.tokenizer().encode_chat(prompt, true);
    request.params.greedy = greedy;
    request.params.temperature = greedy ? 0.0f : 1.2f;
    request.params.max_new_tokens = 6;
    request.params.seed = 100u * static_cast<uint64_t>(episode) + static_cast<uint64_t>(turn);
    request.on_done = [&, episode, turn](GenerationResult&& result) {
      REQUIRE(!result.error);
      replies[{episode, turn}] = {result.generation.ids, result.generation.logprobs};
      chats[static_cast<size_t>(episode)].push_back({"assistant", result.text});
      if (turn + 1 < turns) pending.push_back(episode);
    };
    batcher.add(std::move(request));
  };
  for (int e = 0; e < episodes; ++e) submit(e);
  for (int step = 0; step < 1000 && !batcher.idle(); ++step) {
    batcher.step();
    std::vector<int> next;
    next.swap(pending);
    for (int episode : next) submit(episode);
  }
  CHECK(batcher.idle());
  stats = batcher.stats();
  return replies;
}

/** A block of `tokens` entries, each layer's filled with `value`. */
KVBlock filled_block(const ModelConfig& config, int64_t tokens, float value) {
  const torch::Tensor keys = torch::full({config.num_hidden_layers, 1, config.num_key_value_heads, tokens, config.head_dim()}, value);
  return {torch::cat({keys, -keys}, 1)};
}

/** The keys (kind 0) or values (1) of `layer` in a block: [kv_heads, tokens, head_dim]. */
torch::Tensor part(const KVBlock& block, int64_t layer, int64_t kind) { return block.kv[layer][kind]; }

std::vector<int32_t> run_of(int32_t first, int length) {
  std::vector<int32_t> tokens;
  for (int i = 0; i < length; ++i) tokens.push_back(first + i);
  return tokens;
}

}  // namespace

TEST_CASE("replies with the prefix cache equal those without, token for token, greedy and seeded sampling") {
  torch::set_num_threads(1);
  auto lm = tiny_model();
  for (const bool append_only : {true, false}) {
    for (const bool greedy : {true, false}) {
      INFO("append-only " << append_only << ", greedy " << greedy);
      BatcherStats plain, cached;
      const auto want = play(*lm, 0, greedy, append_only, plain);
      const auto got = play(*lm, 64 << 20, greedy, append_only, cached);
      REQUIRE(got.size() == 20);
      REQUIRE(want.size() == 20);
      for (const auto& [key, turn] : want) {
        INFO("episode " << key.first << ", turn " << key.second);
        CHECK(got.at(key).ids == turn.ids);
        REQUIRE(got.at(key).logprobs.size() == turn.logprobs.size());
        for (size_t t = 0; t < turn.logprobs.size(); ++t) CHECK(got.at(key).logprobs[t] == doctest::Approx(turn.logprobs[t]).epsilon(1e-4));
      }
      // The cache did its work: later turns started from earlier ones' entries.
      CHECK(plain.prefix_cache.lookups == 0);
      CHECK(cached.prefix_cache.lookups == 20);
      CHECK(cached.prefix_cache.hits >= 15);
      CHECK(cached.prefilled_tokens + cached.prefix_cache.reused_tokens == plain.prefilled_tokens);
      CHECK(cached.prefix_cache.reused_share() > (append_only ? 0.6 : 0.3));
    }
  }
}

TEST_CASE("the prefix cache restores what it stored, splits runs, respects the limit and evicts least recently used leaves") {
  auto lm = tiny_model();
  const ModelConfig& config = lm->module()->config();
  const torch::TensorOptions options = torch::TensorOptions().dtype(torch::kFloat32);
  const uint64_t per_token = kv_bytes_per_token(config, 4);
  PrefixCache prefix(30 * per_token, per_token);  // room for 30 tokens
  SlotCache slots(config, options);

  const std::vector<int32_t> a = run_of(10, 10), b = run_of(40, 10), c = run_of(70, 10), d = run_of(100, 10);
  float value = 1.0f;
  for (const auto* tokens : {&a, &b, &c}) {
    slots.clear(0);
    slots.copy_in(0, 0, filled_block(config, 10, value), 10);
    prefix.store(*tokens, 10, slots, 0);
    value += 1.0f;
  }
  CHECK(prefix.stats().cached_tokens == 30);
  CHECK(prefix.stats().bytes == 30 * per_token);

  // A prompt that shares a's first 6 tokens gets them back, entries as stored.
  std::vector<int32_t> a_branch(a.begin(), a.begin() + 6);
  a_branch.push_back(999);
  a_branch.push_back(998);
  slots.clear(1);
  CHECK(prefix.restore(a_branch, 100, slots, 1) == 6);
  CHECK(slots.length(1) == 6);
  const KVBlock restored = slots.copy_out(1, 0, 6);
  CHECK(torch::equal(part(restored, config.num_hidden_layers - 1, 0), torch::full({config.num_key_value_heads, 6, config.head_dim()}, 1.0f)));
  CHECK(torch::equal(part(restored, 0, 1), torch::full({config.num_key_value_heads, 6, config.head_dim()}, -1.0f)));
  slots.clear(1);
  CHECK(prefix.restore(a, 4, slots, 1) == 4);  // the limit
  CHECK(prefix.stats().hits == 2);
  CHECK(prefix.stats().reused_tokens == 10);

  // b is now the least recently used: storing d (a fourth run of 10) evicts it alone.
  slots.clear(0);
  slots.copy_in(0, 0, filled_block(config, 10, 9.0f), 10);
  prefix.store(d, 10, slots, 0);
  CHECK(prefix.match(a) == 10);
  CHECK(prefix.match(b) == 0);
  CHECK(prefix.match(c) == 10);
  CHECK(prefix.match(d) == 10);
  CHECK(prefix.stats().evicted_tokens == 10);
  CHECK(prefix.stats().bytes <= prefix.stats().capacity_bytes);

  // A branch off a's middle splits its run; both halves and the branch are found, a's entries unchanged.
  slots.clear(0);
  slots.copy_in(0, 0, filled_block(config, 8, 5.0f), 8);  // entries differ from a's: the tree keeps its own
  prefix.store(a_branch, 8, slots, 0);
  CHECK(prefix.match(a_branch) == 8);
  CHECK(prefix.match(a) == 10);
  CHECK(prefix.match(c) == 0);  // the least recently used leaf made room for the branch
  slots.clear(1);
  CHECK(prefix.restore(a, 100, slots, 1) == 10);
  CHECK(torch::equal(part(slots.copy_out(1, 0, 10), 0, 0), torch::full({config.num_key_value_heads, 10, config.head_dim()}, 1.0f)));
  CHECK(prefix.stats().cached_tokens <= 30);
}

TEST_CASE("a prefill step over slots of different lengths equals a step per slot") {
  torch::NoGradGuard no_grad;
  auto lm = tiny_model();
  Qwen2Model& module = lm->module();
  const torch::TensorOptions options = torch::TensorOptions().dtype(torch::kFloat32);
  const torch::Tensor prefixes = torch::randint(5, 200, {2, 9}, torch::kInt64);
  const torch::Tensor rest = torch::randint(5, 200, {2, 6}, torch::kInt64);
  const std::vector<int64_t> cached = {9, 3}, real = {6, 4};  // row 1: a shorter prefix and a padded rest
  const int64_t steps = rest.size(1);

  SlotCache together(module->config(), options), last_only(module->config(), options);
  for (int64_t b = 0; b < 2; ++b) {
    for (SlotCache* cache : {&together, &last_only}) {
      module->forward(prefixes[b].narrow(0, 0, cached[static_cast<size_t>(b)]).unsqueeze(0), *cache, b);
    }
  }
  const torch::Tensor both = module->forward(rest, together, 0, real);
  const torch::Tensor both_last = module->forward(rest, last_only, 0, real, 1);
  CHECK(both_last.size(1) == 1);
  for (int64_t b = 0; b < 2; ++b) {
    INFO("row " << b);
    SlotCache alone(module->config(), options);
    module->forward(prefixes[b].narrow(0, 0, cached[static_cast<size_t>(b)]).unsqueeze(0), alone, 0);
    const int64_t n = real[static_cast<size_t>(b)];
    const torch::Tensor one = module->forward(rest[b].narrow(0, steps - n, n).unsqueeze(0), alone, 0);  // left-padded: the last n
    CHECK(together.length(b) == cached[static_cast<size_t>(b)] + n);
    CHECK(torch::allclose(both[b].narrow(0, steps - n, n), one[0], 1e-5, 1e-5));
    CHECK(torch::allclose(both_last[b][0], one[0][n - 1], 1e-5, 1e-5));  // the last position alone, same cache
    CHECK(torch::allclose(last_only.copy_out(b, 0, last_only.length(b)).kv, alone.copy_out(0, 0, alone.length(0)).kv, 1e-5, 1e-5));
    // The slot's entries moved down to its length: a decoding step continues it as the lone slot's.
    const torch::Tensor next = torch::full({1, 1}, 17, torch::kInt64);
    CHECK(torch::allclose(together.copy_out(b, 0, together.length(b)).kv, alone.copy_out(0, 0, alone.length(0)).kv, 1e-5, 1e-5));
    CHECK(torch::allclose(module->forward(next, alone, 0)[0], module->forward(next, together, b)[0], 1e-5, 1e-5));
  }
}
