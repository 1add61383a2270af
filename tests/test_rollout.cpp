#include <doctest/doctest.h>

#include <map>
#include <random>
#include <set>

#include "agents/random_agent.h"
#include "envs/registry.h"
#include "rollout_test_env.h"
#include "trainer/rollout/env_slot.h"
#include "trainer/rollout/episode_runner.h"
#include "trainer/rollout/rollout.h"

using namespace turnrl;

namespace {

trainer::RolloutConfig small_config(bool pipelined) {
  trainer::RolloutConfig config;
  config.n_env = 5;
  config.e_len = 7;
  config.seed = 42;
  config.first_episode_seed = 1000;
  config.pipelined = pipelined;
  config.batch_size = pipelined ? 2 : 0;
  config.turn.reply_format = envs::ReplyFormat::kActionTag;
  config.turn.invalid_penalty = -0.1;
  return config;
}

std::unique_ptr<envs::Env> counting_env(int) { return std::make_unique<test::CountingEnv>(); }

/** (episode id, turn index) -> (reply, reward, done) over several collections. */
using Trace = std::map<std::pair<uint64_t, int>, std::tuple<std::string, double, bool>>;

Trace run(bool pipelined, int collections, std::vector<trainer::RolloutBatch>* batches = nullptr) {
  agents::RandomAgent agent;
  trainer::Rollout rollout(counting_env, agent, small_config(pipelined));
  Trace trace;
  for (int c = 0; c < collections; ++c) {
    trainer::RolloutBatch batch = rollout.collect();
    for (const auto& turn : batch.turns) {
      const bool inserted = trace.emplace(std::make_pair(turn.episode_id, turn.turn_index),
                                          std::make_tuple(turn.reply, turn.reward, turn.done()))
                                .second;
      CHECK_MESSAGE(inserted, "duplicate turn ", turn.episode_id, "/", turn.turn_index);
    }
    if (batches) batches->push_back(std::move(batch));
  }
  return trace;
}

}  // namespace

TEST_CASE("fixed-turn batching: exact counts, time-major rows, bootstrap iff unfinished") {
  std::vector<trainer::RolloutBatch> batches;
  run(true, 4, &batches);
  std::map<int, std::pair<uint64_t, int>> last_of_slot;  // slot -> (episode, next turn index)
  for (const auto& batch : batches) {
    REQUIRE(batch.turns.size() == 35u);
    REQUIRE(batch.bootstrap.size() == 5u);
    for (int t = 0; t < batch.e_len; ++t) {
      for (int i = 0; i < batch.n_env; ++i) {
        const auto& turn = batch.at(t, i);
        CHECK(turn.slot == i);
        CHECK_FALSE((turn.terminated && turn.truncated));
        // Consecutive turns of a slot continue its episode or start a new one at turn 0.
        if (auto previous = last_of_slot.find(i); previous != last_of_slot.end()) {
          if (previous->second.first == turn.episode_id) {
            CHECK(turn.turn_index == previous->second.second);
          } else {
            CHECK(turn.turn_index == 0);
          }
        }
        last_of_slot[i] = turn.done() ? std::pair<uint64_t, int>(~uint64_t{0}, 0) : std::pair<uint64_t, int>(turn.episode_id, turn.turn_index + 1);
      }
    }
    for (int i = 0; i < batch.n_env; ++i) {
      const auto& last = batch.at(batch.e_len - 1, i);
      CHECK(batch.bootstrap[i].has_value() == !last.done());
      if (batch.bootstrap[i]) {
        CHECK(batch.bootstrap[i]->episode_id == last.episode_id);
        CHECK(batch.bootstrap[i]->messages.back().content.rfind("Current Observation:\nstep " + std::to_string(last.turn_index + 1), 0) == 0);
      }
    }
  }
  // Episodes straddle collections: at least one bootstrap seen, and every finished episode was
  // reported with its full length.
  size_t bootstraps = 0, finished = 0;
  for (const auto& batch : batches) {
    for (const auto& b : batch.bootstrap) bootstraps += b.has_value();
    finished += batch.finished_episodes.size();
    for (const auto& episode : batch.finished_episodes) CHECK(episode.length >= 1);
  }
  CHECK(bootstraps > 0);
  CHECK(finished > 0);
}

TEST_CASE("no turn lost or duplicated; seeds reproducible; pipelined == lock-step") {
  const Trace a = run(true, 3);
  const Trace b = run(true, 3);
  const Trace c = run(false, 3);
  CHECK(a.size() == 105u);
  CHECK(a == b);
  CHECK(a == c);  // replies are seeded per request, so batching does not change the data
  // Every episode's turns are numbered 0..k-1 without gaps.
  std::map<uint64_t, int> count;
  for (const auto& [key, value] : a) {
    CHECK(key.second == count[key.first]);
    ++count[key.first];
  }
}

TEST_CASE("episode seeds: first_episode_seed + episode id, distinct and reproducible") {
  std::vector<trainer::RolloutBatch> first, second;
  run(true, 3, &first);
  run(false, 3, &second);
  std::set<uint64_t> seeds;
  for (size_t k = 0; k < first.size(); ++k) {
    for (size_t r = 0; r < first[k].turns.size(); ++r) {
      const auto& turn = first[k].turns[r];
      CHECK(turn.episode_seed == second[k].turns[r].episode_seed);
      CHECK(turn.episode_seed == small_config(true).first_episode_seed + turn.episode_id);
      CHECK(turn.episode_id % 5 == static_cast<uint64_t>(turn.slot));
      seeds.insert(turn.episode_seed);
    }
  }
  CHECK(seeds.size() > 5u);  // fresh seeds on auto-reset
}

TEST_CASE("grouped slots begin their k-th episodes from one seed") {
  agents::RandomAgent agent;
  trainer::RolloutConfig config = small_config(true);
  config.n_env = 6;
  config.group_size = 3;
  trainer::Rollout rollout(counting_env, agent, config);
  std::map<std::pair<int, uint64_t>, std::set<uint64_t>> seeds;  // (group, k) -> seeds of its slots
  for (int c = 0; c < 3; ++c) {
    for (const auto& turn : rollout.collect().turns) {
      const uint64_t k = turn.episode_id / 6;
      seeds[{turn.slot / 3, k}].insert(turn.episode_seed);
      CHECK(turn.episode_seed == 1000 + turn.slot / 3 + 2 * k);
    }
  }
  for (const auto& [group_episode, group_seeds] : seeds) CHECK(group_seeds.size() == 1u);
  config.group_size = 4;
  CHECK_THROWS_AS(trainer::Rollout(counting_env, agent, config), std::invalid_argument);
}

TEST_CASE("a restored rollout continues its episodes in flight exactly") {
  agents::RandomAgent agent;
  trainer::Rollout uninterrupted(counting_env, agent, small_config(true));
  uninterrupted.collect();
  trainer::Rollout before(counting_env, agent, small_config(true));
  before.collect();
  const nlohmann::json state = nlohmann::json::parse(before.state().dump());  // as a checkpoint stores it
  size_t replies_in_flight = 0;
  for (const auto& slot : state.at("slots")) replies_in_flight += slot.at("replies").size();
  CHECK(replies_in_flight > 0);
  trainer::Rollout resumed(counting_env, agent, small_config(true));
  resumed.restore(state);
  for (int c = 0; c < 2; ++c) {
    const trainer::RolloutBatch expected = uninterrupted.collect();
    const trainer::RolloutBatch got = resumed.collect();
    REQUIRE(got.turns.size() == expected.turns.size());
    for (size_t r = 0; r < got.turns.size(); ++r) {
      CHECK(got.turns[r].episode_id == expected.turns[r].episode_id);
      CHECK(got.turns[r].turn_index == expected.turns[r].turn_index);
      CHECK(got.turns[r].reply == expected.turns[r].reply);
      CHECK(got.turns[r].reward == expected.turns[r].reward);
    }
  }
  trainer::Rollout wrong_size(counting_env, agent, [] {
    auto config = small_config(true);
    config.n_env = 4;
    return config;
  }());
  CHECK_THROWS_AS(wrong_size.restore(state), std::invalid_argument);
}

TEST_CASE("invalid-action penalty, reward normalisation, terminated vs truncated") {
  class Scripted : public agents::Agent {
   public:
    std::string name() const override { return "scripted"; }
    std::vector<agents::AgentReply> act(const std::vector<agents::AgentPrompt>& prompts) override {
      std::vector<agents::AgentReply> replies;
      for (size_t i = 0; i < prompts.size(); ++i) {
        agents::AgentReply reply;
        reply.text = (calls_++ % 2) ? "ACTION: finish" : "nonsense";
        replies.push_back(reply);
      }
      return replies;
    }
    int calls_ = 0;
  } agent;
  trainer::RolloutConfig config;
  config.n_env = 1;
  config.e_len = 4;
  config.turn.reply_format = envs::ReplyFormat::kActionTag;
  config.turn.invalid_penalty = -0.25;
  config.normalize_reward_by_length = true;
  trainer::Rollout rollout(counting_env, agent, config);
  const auto batch = rollout.collect();
  // Turn 0: invalid -> default "wait", penalty; turn 1: finish on step 2 -> terminated, reward 1.
  CHECK_FALSE(batch.turns[0].valid_action);
  CHECK(batch.turns[0].action == 0);
  CHECK(batch.turns[0].reward == doctest::Approx(-0.125));  // normalised by the 2-turn episode
  CHECK(batch.turns[1].terminated);
  CHECK_FALSE(batch.turns[1].truncated);
  CHECK(batch.turns[1].reward == doctest::Approx(0.5));
  REQUIRE(batch.finished_episodes.size() >= 1);
  CHECK(batch.finished_episodes[0].episode_return == doctest::Approx(0.75));
  CHECK(batch.turns[2].turn_index == 0);
}

TEST_CASE("garbled replies never crash and always end in a valid action") {
  std::string binary;
  for (int c = 0; c < 256; ++c) binary.push_back(static_cast<char>(c));
  const std::vector<std::string> replies = {
      "", std::string(1 << 20, 'x'), binary, "I think I should go forward", "ACTION: turn left ACTION: toggle ACTION:",
      "ACTION: go forward\nACTION: pick up", "action:", "Action", std::string("go\0forward", 10), "ACTION: \xff\xfe",
      "ACTION:    GO_FORWARD  ", "turnleft"};
  for (const std::string format : {"action-tag", "balrog"}) {
    for (const std::string& id : envs::env_ids()) {
      trainer::TurnSettings turn;
      turn.reply_format = format == "balrog" ? envs::ReplyFormat::kBalrogNaive : envs::ReplyFormat::kActionTag;
      turn.invalid_feedback = true;
      turn.invalid_penalty = -0.1;
      turn.history_entry = envs::HistoryEntry::kReplyWithExecuted;
      trainer::EnvSlot slot(envs::make_env(id), turn, 1);
      slot.begin_episode(3);
      for (const auto& reply : replies) {
        if (slot.done()) slot.begin_episode(4);
        const auto outcome = slot.apply(reply);
        CHECK(outcome.action >= 0);
        CHECK(outcome.action < slot.env().num_actions());
        if (!outcome.valid) CHECK(outcome.reward == doctest::Approx(-0.1));
        CHECK_FALSE(slot.prompt(nullptr).empty());
      }
    }
  }
  // A reply with several ACTIONs uses the last one (Verlog); synonyms translate.
  trainer::TurnSettings tagged;
  tagged.reply_format = envs::ReplyFormat::kActionTag;
  trainer::EnvSlot slot(envs::make_env("babyai/goto"), tagged, 1);
  slot.begin_episode(0);
  CHECK(slot.apply("ACTION: go forward\nACTION: turn left").action == 0);
  CHECK(slot.apply("ACTION: turnright").action == 1);
  trainer::TurnSettings extra = tagged;
  extra.synonyms["spin"] = {"turn left"};
  trainer::EnvSlot translated(envs::make_env("babyai/goto"), extra, 1);
  translated.begin_episode(0);
  const auto outcome = translated.apply("ACTION: spin");
  CHECK(outcome.valid);
  CHECK(outcome.action == 0);
}

TEST_CASE("BALROG feedback prefix after an invalid reply; raw reply in history") {
  trainer::TurnSettings turn;  // the defaults are BALROG's protocol
  trainer::EnvSlot slot(envs::make_env("babyai/goto"), turn, 1);
  slot.begin_episode(0);
  slot.apply("Go forward!");
  const auto messages = slot.prompt(nullptr);
  REQUIRE(messages.size() == 4);
  CHECK(messages[2].role == "assistant");
  CHECK(messages[2].content == "Go forward");
  CHECK(messages[3].content.rfind("Current Observation:\n\n\nYour previous output did not contain a valid action. "
                                  "Defaulted to action: go forward\n\nObservation:\n",
                                  0) == 0);
}

TEST_CASE("episode runner: every job once, whole episodes, text recorded") {
  agents::RandomAgent agent;
  std::vector<trainer::EpisodeJob> jobs;
  for (size_t k = 0; k < 7; ++k) jobs.push_back({"babyai/goto", 100 + k, k});
  trainer::EpisodeRunnerConfig config;
  config.parallel_episodes = 3;
  config.turn.max_turns = 10;
  std::set<size_t> keys;
  trainer::run_episodes(jobs, [](const std::string& id) { return envs::make_env(id); }, agent, config,
                        [&](trainer::EpisodeLog&& log) {
                          CHECK(keys.insert(log.job.key).second);
                          CHECK(log.turns.size() >= 1u);
                          CHECK(log.turns.size() <= 10u);
                          CHECK((log.terminated || log.truncated));
                          for (const auto& turn : log.turns) {
                            CHECK(turn.reply == turn.action);
                            CHECK(turn.prompt.size() >= 2u);
                          }
                        });
  CHECK(keys.size() == 7u);
}

TEST_CASE("memory windows shrink to the agent's prompt limit") {
  struct Limited : agents::Agent {
    size_t limit = 0;
    std::string name() const override { return "limited"; }
    std::vector<agents::AgentReply> act(const std::vector<agents::AgentPrompt>& prompts) override {
      return std::vector<agents::AgentReply>(prompts.size());
    }
    size_t max_prompt_tokens() const override { return limit; }
  } agent;
  trainer::TurnSettings turn;
  turn.token_budget = 0;
  CHECK(turn.history_config(agent.max_prompt_tokens()).token_budget == 0);  // no limit: unchanged
  agent.limit = 500;
  CHECK(turn.history_config(agent.max_prompt_tokens()).token_budget == 500);
  turn.token_budget = 300;
  CHECK(turn.history_config(agent.max_prompt_tokens()).token_budget == 300);  // a tighter budget stays
  turn.token_budget = 800;
  CHECK(turn.history_config(agent.max_prompt_tokens()).token_budget == 500);
}

TEST_CASE("the rollout records where each reply's action tokens start, from the one reply parser") {
  // A token-level agent whose replies are split into words: what a local model returns.
  class WordAgent : public agents::Agent {
   public:
    explicit WordAgent(std::vector<std::string> replies) : replies_(std::move(replies)) {}
    std::string name() const override { return "words"; }
    bool token_level() const override { return true; }
    std::vector<agents::AgentReply> act(const std::vector<agents::AgentPrompt>& prompts) override {
      std::vector<agents::AgentReply> out;
      for (size_t i = 0; i < prompts.size(); ++i) {
        agents::AgentReply reply;
        reply.text = replies_[calls_++ % replies_.size()];
        for (size_t at = 0; at < reply.text.size();) {
          const size_t space = reply.text.find(' ', at);
          at = space == std::string::npos ? reply.text.size() : space + 1;
          reply.token_text_ends.push_back(static_cast<uint32_t>(at));
          reply.response_ids.push_back(static_cast<int32_t>(reply.token_text_ends.size()));
        }
        out.push_back(std::move(reply));
      }
      return out;
    }

   private:
    std::vector<std::string> replies_;
    size_t calls_ = 0;
  };
  // Tokens: "THINK: " "ACTION: " "no. " "ACTION: " "go". The action text begins at the space after the
  // last marker (byte 26), which token 3 holds: the first token holding action text is token 3.
  // Without a marker the whole reply is the action: token 0.
  WordAgent agent({"THINK: ACTION: no. ACTION: go", "go"});
  trainer::RolloutConfig config;
  config.n_env = 1;
  config.e_len = 4;
  config.turn.reply_format = envs::ReplyFormat::kActionTag;
  trainer::Rollout rollout([](int) { return envs::make_env("babyai/goto"); }, agent, config);
  const auto batch = rollout.collect();
  CHECK(batch.turns[0].response_ids.size() == 5u);
  CHECK(batch.turns[0].action_token_start == 3);
  CHECK(batch.turns[1].action_token_start == 0);
  CHECK(batch.turns[2].action_token_start == 3);
  CHECK(trainer::action_token_start({5, 10, 15}, 10) == 2);
  CHECK(trainer::action_token_start({5, 10, 15}, 15) == 3);  // no token holds action text
}

TEST_CASE("BALROG layout: a reply the letter filter empties stays out of the history") {
  trainer::TurnSettings turn;  // BALROG: naive format, balrog layout
  trainer::EnvSlot slot(envs::make_env("babyai/goto"), turn, 1);
  slot.begin_episode(0);
  slot.apply("123!");  // filters to "": invalid, default action, no assistant message
  auto messages = slot.prompt(nullptr);
  REQUIRE(messages.size() == 3);
  CHECK(messages[1].role == "user");
  CHECK(messages[2].role == "user");
  // Other layouts keep the empty assistant message.
  turn.layout = trainer::TurnLayout::kVerlog;
  trainer::EnvSlot verlog(envs::make_env("babyai/goto"), turn, 1);
  verlog.begin_episode(0);
  verlog.apply("123!");
  messages = verlog.prompt(nullptr);
  REQUIRE(messages.size() == 4);
  CHECK(messages[2].role == "assistant");
}

TEST_CASE("Agent::submit by default answers at once through act(), errors included") {
  test::CountingEnv env;
  agents::RandomAgent agent;
  CHECK_FALSE(agent.asynchronous());
  agents::AgentPrompt prompt;
  prompt.actions = &env.actions();
  prompt.seed = 7;
  int calls = 0;
  agent.submit(prompt, [&](agents::AgentResult result) {
    ++calls;
    CHECK_FALSE(result.error);
    CHECK(result.reply.text == agent.act({prompt}).front().text);
  });
  CHECK(calls == 1);
  prompt.actions = nullptr;  // the random agent's act() throws on a prompt without actions
  agent.submit(prompt, [&](agents::AgentResult result) {
    ++calls;
    REQUIRE(result.error);
    CHECK_THROWS_AS(std::rethrow_exception(result.error), std::invalid_argument);
  });
  CHECK(calls == 2);
}
