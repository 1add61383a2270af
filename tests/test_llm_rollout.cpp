// Fiber rollouts with the tiny LLM: the same turns as lock-step for the same seeds, whatever
// batches the prompts land in.
#include <doctest/doctest.h>

#include <filesystem>

#include <unistd.h>

#include "agents/llm_agent.h"
#include "agents/model/new_model.h"
#include "envs/registry.h"
#include "trainer/rollout/rollout.h"

using namespace turnrl;

namespace {

std::vector<trainer::RolloutBatch> collect(const std::shared_ptr<agents::LanguageModel>& model, bool lock_step, size_t batch_size) {
  agents::SamplingParams params;
  params.max_new_tokens = 6;
  params.seed = 11;
  agents::LlmAgent agent(model, params);
  trainer::RolloutConfig config;
  config.n_env = 6;
  config.e_len = 5;
  config.seed = 42;
  config.first_episode_seed = 500;
  config.lock_step = lock_step;
  config.batch_size = batch_size;
  config.turn.history = 1;
  config.turn.max_turns = 4;  // episodes end and restart within a collection
  config.turn.reply_format = envs::ReplyFormat::kActionTag;
  trainer::Rollout rollout([](int) { return envs::make_env("babyai/goto"); }, agent, config);
  std::vector<trainer::RolloutBatch> batches;
  for (int c = 0; c < 2; ++c) batches.push_back(rollout.collect());
  return batches;
}

}  // namespace

TEST_CASE("tiny LLM: a fiber rollout equals a lock-step rollout turn for turn") {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / ("turnrl_test_llm_rollout_" + std::to_string(::getpid()));
  agents::write_new_model("tiny", dir.string(), 3, "");
  const std::shared_ptr<agents::LanguageModel> model = agents::LanguageModel::load(dir.string());
  std::filesystem::remove_all(dir);
  const auto lock_step = collect(model, true, 0);
  for (size_t batch_size : {size_t{0}, size_t{1}, size_t{4}}) {
    CAPTURE(batch_size);
    const auto fibers = collect(model, false, batch_size);
    REQUIRE(fibers.size() == lock_step.size());
    for (size_t c = 0; c < fibers.size(); ++c) {
      const trainer::RolloutBatch& a = lock_step[c];
      const trainer::RolloutBatch& b = fibers[c];
      REQUIRE(b.turns.size() == 30u);
      REQUIRE(a.turns.size() == b.turns.size());
      for (size_t row = 0; row < a.turns.size(); ++row) {
        CAPTURE(row);
        const trainer::TurnRecord& x = a.turns[row];
        const trainer::TurnRecord& y = b.turns[row];
        CHECK(x.slot == y.slot);
        CHECK(x.episode_id == y.episode_id);
        CHECK(x.turn_index == y.turn_index);
        CHECK(x.prompt_ids == y.prompt_ids);
        CHECK(x.response_ids == y.response_ids);
        CHECK(x.reply == y.reply);
        CHECK(x.action == y.action);
        CHECK(x.reward == y.reward);
        CHECK(x.done() == y.done());
        CHECK(x.action_token_start == y.action_token_start);
        REQUIRE(x.logprobs.size() == y.logprobs.size());
        for (size_t k = 0; k < x.logprobs.size(); ++k) CHECK(x.logprobs[k] == doctest::Approx(y.logprobs[k]).epsilon(1e-4));
      }
      for (int i = 0; i < a.n_env; ++i) {
        REQUIRE(a.bootstrap[i].has_value() == b.bootstrap[i].has_value());
        if (a.bootstrap[i]) CHECK(a.bootstrap[i]->prompt_ids == b.bootstrap[i]->prompt_ids);
      }
    }
  }
}
