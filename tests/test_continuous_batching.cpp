// The continuous-batching engine against the batched, left-padded generation (and Hugging Face's
// own greedy tokens): the same reply for the same prompt and seed, whenever a request arrives;
// LlmAgent::submit on the engine.
#include "torch_doctest.h"

#include <filesystem>
#include <fstream>
#include <future>
#include <map>
#include <thread>

#include <unistd.h>

#include <nlohmann/json.hpp>

#include "agents/llm_agent.h"
#include "agents/model/continuous_batcher.h"
#include "agents/model/generation_engine.h"
#include "agents/model/new_model.h"
#include "test_util.h"

using namespace turnrl::agents;

namespace {

/** The tiny preset (word-level tokenizer, <|im_end|> stops) written once per test process. */
std::shared_ptr<LanguageModel> tiny_model() {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / ("turnrl_test_batching_" + std::to_string(::getpid()));
  if (!std::filesystem::exists(dir / "model.safetensors")) write_new_model("tiny", dir.string(), 11, "");
  return LanguageModel::load(dir.string());
}

std::vector<std::vector<int32_t>> chat_prompts(const LanguageModel& lm) {
  const std::vector<std::string> texts = {"go to the red ball", "you see a wall 2 steps forward", "pick up the key",
                                          "open the door", "turn left", "you see a grey box 1 step left and 3 steps forward",
                                          "put the ball next to the box"};
  std::vector<std::vector<int32_t>> prompts;
  for (const auto& text : texts) prompts.push_back(lm.tokenizer().encode_chat({{"system", "you are an agent"}, {"user", text}}, true));
  return prompts;
}

SamplingParams sampling(bool greedy) {
  SamplingParams params;
  params.greedy = greedy;
  params.temperature = greedy ? 0.0f : 1.3f;
  params.top_p = greedy ? 1.0f : 0.95f;
  params.top_k = greedy ? 0 : 40;
  params.max_new_tokens = 24;
  return params;
}

std::string reply_text(const LanguageModel& lm, const Generation& generation) {
  std::vector<int32_t> ids = generation.ids;
  if (generation.stopped) ids.pop_back();
  return lm.tokenizer().decode(ids);
}

}  // namespace

TEST_CASE("continuous batching equals batched generation, greedy and sampled, requests joining at different steps") {
  torch::set_num_threads(1);
  auto lm = tiny_model();
  const auto prompts = chat_prompts(*lm);
  for (const bool greedy : {true, false}) {
    INFO("greedy " << greedy);
    SamplingParams params = sampling(greedy);
    for (size_t i = 0; i < prompts.size(); ++i) params.row_seeds.push_back(1000 + 17 * i);
    const std::vector<Generation> reference = lm->generate(prompts, params);

    // Requests arrive at different steps with different length limits, more than the batch holds.
    const std::vector<int> arrival = {0, 0, 1, 3, 3, 4, 9};
    const std::vector<int> max_tokens = {24, 5, 12, 1, 24, 7, 16};
    ContinuousBatcher batcher(*lm, 3);
    std::map<size_t, GenerationResult> results;
    size_t most_running = 0, most_waiting = 0;
    for (int step = 0; step < 200 && (results.size() < prompts.size()); ++step) {
      for (size_t i = 0; i < prompts.size(); ++i) {
        if (arrival[i] != step) continue;
        GenerationRequest request;
        request.prompt = prompts[i];
        request.params = sampling(greedy);
        request.params.seed = params.row_seeds[i];
        request.params.max_new_tokens = max_tokens[i];
        request.on_done = [&results, i](GenerationResult&& result) { results[i] = std::move(result); };
        batcher.add(std::move(request));
      }
      most_waiting = std::max(most_waiting, batcher.waiting());
      batcher.step();
      most_running = std::max(most_running, batcher.running());
    }
    CHECK(batcher.idle());
    CHECK(most_running == 3);  // the batch filled up ...
    CHECK(most_waiting > 0);   // ... and requests waited for room
    REQUIRE(results.size() == prompts.size());
    for (size_t i = 0; i < prompts.size(); ++i) {
      INFO("request " << i);
      const GenerationResult& got = results[i];
      CHECK(!got.error);
      // The reference ran to 24 tokens: the engine's reply is its first max_tokens[i] (or up to its stop).
      Generation want = reference[i];
      if (static_cast<int>(want.ids.size()) > max_tokens[i]) {
        want.ids.resize(max_tokens[i]);
        want.logprobs.resize(max_tokens[i]);
        want.stopped = false;
      }
      CHECK(got.generation.ids == want.ids);
      REQUIRE(got.generation.logprobs.size() == want.logprobs.size());
      for (size_t t = 0; t < want.logprobs.size(); ++t) CHECK(got.generation.logprobs[t] == doctest::Approx(want.logprobs[t]).epsilon(1e-4));
      CHECK(got.generation.stopped == want.stopped);
      CHECK(got.finish_reason == (want.stopped ? "stop" : "length"));
      CHECK(got.text == reply_text(*lm, want));
    }
  }
}

TEST_CASE("continuous batching reproduces Hugging Face's greedy tokens (every shared folder, fused and torch paths)") {
  torch::set_num_threads(1);
  for (const char* name : {"tiny-qwen2-tied", "tiny-qwen2-untied", "tiny-qwen2-untied-bf16"}) {
    INFO(name);
    auto lm = LanguageModel::load(turnrl::test::shared_path(std::string("models/") + name));
    std::ifstream in(turnrl::test::shared_path(std::string("models/") + name + "/golden.json"));
    const nlohmann::json gold = nlohmann::json::parse(in);
    ContinuousBatcher batcher(*lm, 4);
    std::vector<std::pair<std::vector<int32_t>, std::vector<int32_t>>> expected;  // prompt, tokens
    std::map<size_t, GenerationResult> results;
    for (const auto& g : gold["generation"]) {
      for (size_t b = 0; b < g["input_ids"].size(); ++b) {
        std::vector<int32_t> prompt;
        for (size_t t = 0; t < g["input_ids"][b].size(); ++t) {
          if (g["attention_mask"][b][t].get<int>() == 1) prompt.push_back(g["input_ids"][b][t].get<int32_t>());
        }
        const size_t index = expected.size();
        expected.emplace_back(prompt, g["new_tokens"][b].get<std::vector<int32_t>>());
        GenerationRequest request;
        request.prompt = prompt;
        request.params.greedy = true;
        request.params.max_new_tokens = g["max_new_tokens"].get<int>();
        request.on_done = [&results, index](GenerationResult&& result) { results[index] = std::move(result); };
        batcher.add(std::move(request));
        batcher.step();  // each request joins a batch already decoding
      }
    }
    while (!batcher.idle()) batcher.step();
    REQUIRE(results.size() == expected.size());
    for (size_t i = 0; i < expected.size(); ++i) {
      CHECK(results[i].generation.ids == expected[i].second);
      CHECK(results[i].text.empty());  // a bare folder has no tokenizer
    }
  }
}

TEST_CASE("stop strings end the reply before them; streamed text adds up to the reply; on_text can cancel") {
  torch::set_num_threads(1);
  auto lm = tiny_model();
  const auto prompts = chat_prompts(*lm);
  SamplingParams params = sampling(false);
  params.row_seeds = {5};
  const Generation reference = lm->generate({prompts[1]}, params)[0];
  const std::string full = reply_text(*lm, reference);
  REQUIRE(reference.ids.size() >= 6);
  // The fifth token's word as a stop string: the reply ends before its first occurrence.
  const std::string stop = lm->tokenizer().decode({reference.ids[4]});
  const size_t cut = full.find(stop);
  REQUIRE(cut != std::string::npos);

  ContinuousBatcher batcher(*lm, 4);
  GenerationResult stopped, cancelled, streamed;
  std::string pieces, stream_pieces;
  int cancel_calls = 0;
  auto request = [&](std::vector<std::string> stops, std::function<bool(const std::string&)> on_text, GenerationResult& into) {
    GenerationRequest r;
    r.prompt = prompts[1];
    r.params = sampling(false);
    r.params.seed = 5;
    r.stop = std::move(stops);
    r.on_text = std::move(on_text);
    r.on_done = [&into](GenerationResult&& result) { into = std::move(result); };
    batcher.add(std::move(r));
  };
  request({"never appears here", stop}, [&](const std::string& piece) { return pieces += piece, true; }, stopped);
  request({}, [&](const std::string& piece) { return stream_pieces += piece, true; }, streamed);
  request({}, [&](const std::string&) { return ++cancel_calls < 2; }, cancelled);
  while (!batcher.idle()) batcher.step();

  CHECK(stopped.finish_reason == "stop");
  CHECK(!stopped.generation.stopped);
  CHECK(stopped.text == full.substr(0, cut));
  CHECK(pieces == stopped.text);  // nothing of the stop string was streamed
  CHECK(stopped.generation.ids.size() < reference.ids.size());
  CHECK(streamed.text == full);
  CHECK(stream_pieces == full);
  CHECK(streamed.generation.ids == reference.ids);
  CHECK(cancelled.finish_reason == "cancelled");
  CHECK(cancel_calls == 2);
  CHECK(cancelled.generation.ids.size() == 2);

  GenerationRequest bad;
  bad.on_done = [](GenerationResult&&) {};
  CHECK_THROWS_WITH_AS(batcher.check(bad), doctest::Contains("empty"), std::invalid_argument);
  bad.prompt.assign(static_cast<size_t>(lm->context_length()), prompts[0][0]);
  CHECK_THROWS_WITH_AS(batcher.check(bad), doctest::Contains("no room"), std::invalid_argument);
  bad.prompt = prompts[0];
  bad.stop = {""};
  CHECK_THROWS_WITH_AS(batcher.check(bad), doctest::Contains("stop string is empty"), std::invalid_argument);
}

TEST_CASE("the engine's thread serves requests from several threads with the batched replies; stopping fails the rest") {
  torch::set_num_threads(1);
  auto lm = tiny_model();
  const auto prompts = chat_prompts(*lm);
  SamplingParams params = sampling(false);
  for (size_t i = 0; i < prompts.size(); ++i) params.row_seeds.push_back(77 + i);
  const std::vector<Generation> reference = lm->generate(prompts, params);
  {
    GenerationEngine engine(lm, 4);
    std::vector<std::future<GenerationResult>> futures(prompts.size());
    std::vector<std::thread> clients;
    for (size_t i = 0; i < prompts.size(); ++i) {
      auto promise = std::make_shared<std::promise<GenerationResult>>();
      futures[i] = promise->get_future();
      clients.emplace_back([&, i, promise] {
        std::this_thread::sleep_for(std::chrono::milliseconds(3 * i));
        GenerationRequest request;
        request.prompt = prompts[i];
        request.params = sampling(false);
        request.params.seed = params.row_seeds[i];
        request.on_done = [promise](GenerationResult&& result) { promise->set_value(std::move(result)); };
        engine.submit(std::move(request));
      });
    }
    for (auto& client : clients) client.join();
    for (size_t i = 0; i < prompts.size(); ++i) CHECK(futures[i].get().generation.ids == reference[i].ids);
    GenerationRequest empty;
    empty.on_done = [](GenerationResult&&) {};
    CHECK_THROWS_AS(engine.submit(std::move(empty)), std::invalid_argument);
  }
  // Requests still in flight when the engine goes away end with an error, never silently.
  std::future<GenerationResult> late;
  {
    GenerationEngine engine(lm, 1);
    for (int i = 0; i < 3; ++i) {
      auto promise = std::make_shared<std::promise<GenerationResult>>();
      if (i == 2) late = promise->get_future();
      GenerationRequest request;
      request.prompt = prompts[0];
      request.params.max_new_tokens = 1000;
      request.params.allowed_tokens = {prompts[0][1]};  // never a stop token: each runs its full length
      request.on_done = [promise](GenerationResult&& result) { promise->set_value(std::move(result)); };
      engine.submit(std::move(request));
    }
  }
  const GenerationResult result = late.get();
  REQUIRE(result.error);
  CHECK_THROWS_WITH(std::rethrow_exception(result.error), doctest::Contains("engine stopped"));
}

TEST_CASE("LlmAgent::submit answers on the engine with act()'s replies; a prompt that does not fit comes back as an error") {
  torch::set_num_threads(1);
  auto lm = tiny_model();
  SamplingParams params = sampling(false);
  params.max_new_tokens = 16;
  params.seed = 3;
  LlmAgent agent(lm, params, "tiny", 3);
  CHECK(agent.asynchronous());
  std::vector<AgentPrompt> prompts;
  for (const std::string text : {"go to the red ball", "pick up the key", "open the door", "turn left", "you see a wall"}) {
    AgentPrompt prompt;
    prompt.messages = {{"user", text}};
    prompt.seed = prompts.size() * 31;
    prompts.push_back(prompt);
  }
  const std::vector<AgentReply> want = agent.act(prompts);
  std::vector<std::future<AgentResult>> got;
  for (const AgentPrompt& prompt : prompts) {
    auto promise = std::make_shared<std::promise<AgentResult>>();
    got.push_back(promise->get_future());
    agent.submit(prompt, [promise](AgentResult result) { promise->set_value(std::move(result)); });
  }
  for (size_t i = 0; i < prompts.size(); ++i) {
    const AgentResult result = got[i].get();
    REQUIRE(!result.error);
    CHECK(result.reply.text == want[i].text);
    CHECK(result.reply.prompt_ids == want[i].prompt_ids);
    CHECK(result.reply.response_ids == want[i].response_ids);
    CHECK(result.reply.token_text_ends == want[i].token_text_ends);
    CHECK(result.reply.truncated == want[i].truncated);
    REQUIRE(result.reply.logprobs.size() == want[i].logprobs.size());
    for (size_t t = 0; t < want[i].logprobs.size(); ++t) CHECK(result.reply.logprobs[t] == doctest::Approx(want[i].logprobs[t]).epsilon(1e-4));
  }
  AgentPrompt huge;
  std::string words;
  for (int i = 0; i < 1100; ++i) words += "ball ";
  huge.messages = {{"user", words}};
  int calls = 0;
  std::exception_ptr error;
  agent.submit(huge, [&](AgentResult result) {
    ++calls;
    error = result.error;
  });
  CHECK(calls == 1);
  REQUIRE(error);
  CHECK_THROWS_AS(std::rethrow_exception(error), std::length_error);
}
