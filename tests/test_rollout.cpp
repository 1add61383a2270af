#include <doctest/doctest.h>

#include <algorithm>
#include <condition_variable>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <sstream>
#include <thread>

#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include "agents/expert_agent.h"
#include "agents/http_agent.h"
#include "agents/random_agent.h"
#include "envs/expert.h"
#include "envs/registry.h"
#include "rollout_test_env.h"
#include "tools/serve/openai_stub_server.h"
#include "trainer/rollout/env_slot.h"
#include "trainer/rollout/episode_runner.h"
#include "trainer/rollout/progress_line.h"
#include "trainer/rollout/rollout.h"

using namespace turnrl;

namespace {

trainer::RolloutConfig small_config(bool lock_step) {
  trainer::RolloutConfig config;
  config.n_env = 5;
  config.e_len = 7;
  config.seed = 42;
  config.first_episode_seed = 1000;
  config.lock_step = lock_step;
  config.batch_size = 2;  // ignored in lock-step
  config.turn.reply_format = envs::ReplyFormat::kActionTag;
  config.turn.invalid_penalty = -0.1;
  return config;
}

std::unique_ptr<envs::Env> counting_env(int) { return std::make_unique<test::CountingEnv>(); }

/** (episode id, turn index) -> (reply, reward, done) over several collections. */
using Trace = std::map<std::pair<uint64_t, int>, std::tuple<std::string, double, bool>>;

/** The random agent's replies, asynchronously: answered on the agent's own thread in a scrambled
 *  order; requests `fails` picks come back as errors. Counts the requests outstanding at once. */
class ScrambledAgent : public agents::Agent {
 public:
  explicit ScrambledAgent(uint64_t scramble_seed, std::function<bool(const agents::AgentPrompt&)> fails = nullptr)
      : fails_(std::move(fails)), rng_(scramble_seed), worker_([this] { answer(); }) {}
  ~ScrambledAgent() override {
    {
      const std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
    }
    arrived_.notify_one();
    worker_.join();
  }
  std::string name() const override { return "scrambled"; }
  bool asynchronous() const override { return true; }
  std::vector<agents::AgentReply> act(const std::vector<agents::AgentPrompt>& prompts) override {
    ++act_calls;
    return random_.act(prompts);
  }
  void submit(agents::AgentPrompt prompt, agents::ReplyHandler on_reply) override {
    const std::lock_guard<std::mutex> lock(mutex_);
    queue_.emplace_back(std::move(prompt), std::move(on_reply));
    max_outstanding = std::max(max_outstanding, ++outstanding_);
    arrived_.notify_one();
  }
  size_t max_outstanding = 0;
  int act_calls = 0;

 private:
  void answer() {
    std::unique_lock<std::mutex> lock(mutex_);
    for (;;) {
      arrived_.wait(lock, [this] { return stop_ || !queue_.empty(); });
      if (queue_.empty()) return;
      lock.unlock();
      std::this_thread::sleep_for(std::chrono::microseconds(200));  // let a few arrive, then pick any
      lock.lock();
      const size_t pick = std::uniform_int_distribution<size_t>(0, queue_.size() - 1)(rng_);
      auto [prompt, on_reply] = std::move(queue_[pick]);
      queue_.erase(queue_.begin() + static_cast<std::ptrdiff_t>(pick));
      --outstanding_;
      lock.unlock();
      agents::AgentResult result;
      if (fails_ && fails_(prompt)) result.error = std::make_exception_ptr(std::runtime_error("scripted failure"));
      else result.reply = random_.act({prompt}).front();
      on_reply(std::move(result));
      lock.lock();
    }
  }

  std::function<bool(const agents::AgentPrompt&)> fails_;
  agents::RandomAgent random_;
  std::mt19937_64 rng_;
  std::mutex mutex_;
  std::condition_variable arrived_;
  std::vector<std::pair<agents::AgentPrompt, agents::ReplyHandler>> queue_;
  size_t outstanding_ = 0;
  bool stop_ = false;
  std::thread worker_;
};

Trace trace_of(agents::Agent& agent, const trainer::RolloutConfig& config, int collections,
               std::vector<trainer::RolloutBatch>* batches = nullptr) {
  trainer::Rollout rollout(counting_env, agent, config);
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

Trace run(bool lock_step, int collections, std::vector<trainer::RolloutBatch>* batches = nullptr) {
  agents::RandomAgent agent;
  return trace_of(agent, small_config(lock_step), collections, batches);
}

/** Everything logged while it lives. */
class LogCapture {
 public:
  LogCapture() : previous_(spdlog::default_logger()) {
    spdlog::set_default_logger(std::make_shared<spdlog::logger>("capture", std::make_shared<spdlog::sinks::ostream_sink_mt>(text_)));
  }
  ~LogCapture() { spdlog::set_default_logger(previous_); }
  std::string text() const { return text_.str(); }

 private:
  std::shared_ptr<spdlog::logger> previous_;
  std::ostringstream text_;
};

}  // namespace

TEST_CASE("fixed-turn batching: exact counts, time-major rows, bootstrap iff unfinished") {
  std::vector<trainer::RolloutBatch> batches;
  run(false, 4, &batches);
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

TEST_CASE("no turn lost or duplicated; seeds reproducible; fibers == lock-step") {
  const Trace a = run(false, 3);
  const Trace b = run(false, 3);
  const Trace c = run(true, 3);
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

TEST_CASE("fibers over an asynchronous agent answering out of order == lock-step, turn for turn") {
  const Trace lock_step = run(true, 3);
  ScrambledAgent first(1), second(2);
  const Trace scrambled = trace_of(first, small_config(false), 3);
  CHECK(scrambled == lock_step);
  CHECK(trace_of(second, small_config(false), 3) == lock_step);
  CHECK(first.act_calls == 0);  // every request went through submit
  CHECK(first.max_outstanding > 1u);  // requests overlap
  CHECK(first.max_outstanding <= 5u);
  ScrambledAgent third(3);
  CHECK(trace_of(third, small_config(true), 3) == lock_step);
  CHECK(third.act_calls == 21);  // lock-step: one act() call per turn of all slots
}

TEST_CASE("a failed request ends its slot's episode with the default action, logged; no turn lost or doubled") {
  auto fails = [](const agents::AgentPrompt& prompt) { return prompt.seed % 5 == 0; };
  ScrambledAgent first(1, fails), second(2, fails);
  std::vector<trainer::RolloutBatch> batches;
  LogCapture log;
  const Trace a = trace_of(first, small_config(false), 4, &batches);
  CHECK(a.size() == 140u);
  CHECK(trace_of(second, small_config(false), 4) == a);  // errors land on the same turns in any order
  size_t errors = 0;
  for (const auto& batch : batches) {
    REQUIRE(batch.turns.size() == 35u);
    for (int t = 0; t < batch.e_len; ++t) {
      for (int i = 0; i < batch.n_env; ++i) {
        const trainer::TurnRecord& turn = batch.at(t, i);
        CHECK(turn.slot == i);
        if (turn.agent_error.empty()) continue;
        ++errors;
        CHECK(turn.agent_error == "scripted failure");
        CHECK(turn.action == 0);  // CountingEnv's default
        CHECK(turn.reply.empty());
        CHECK_FALSE(turn.valid_action);
        CHECK(turn.reward == 0.0);  // no invalid-reply penalty: there was no reply
        CHECK(turn.done());
        if (t + 1 < batch.e_len) CHECK(batch.at(t + 1, i).turn_index == 0);  // the slot's next episode
        const bool summarised = std::any_of(batch.finished_episodes.begin(), batch.finished_episodes.end(),
                                            [&](const trainer::EpisodeSummary& e) { return e.episode_id == turn.episode_id; });
        CHECK(summarised);
      }
    }
  }
  CHECK(errors > 0);
  CHECK(log.text().find("gave no reply (scripted failure)") != std::string::npos);
  // Turn indices of every episode run 0..k-1 without gaps.
  std::map<uint64_t, int> count;
  for (const auto& [key, value] : a) CHECK(key.second == count[key.first]++);
}

TEST_CASE("an HTTP request that times out ends its slot's episode; the other slots go on") {
  serve::OpenAiStubServer server([](int, const nlohmann::json& request) {
    const uint64_t seed = request["seed"];
    return serve::ChatStubReply{200, seed % 4 == 0 ? "<action>finish</action>" : "<action>wait</action>", seed % 9 == 0 ? 1500 : 5};
  });
  agents::HttpAgentConfig http;
  http.base_url = server.base_url();
  http.timeout_s = 0.3;
  http.retries = 0;
  http.concurrency = 5;
  agents::HttpAgent agent(http);
  std::vector<trainer::RolloutBatch> batches;
  LogCapture log;
  trace_of(agent, small_config(false), 2, &batches);
  size_t timeouts = 0, played = 0;
  for (const auto& batch : batches) {
    REQUIRE(batch.turns.size() == 35u);
    for (const auto& turn : batch.turns) {
      if (turn.agent_error.empty()) {
        ++played;
        continue;
      }
      ++timeouts;
      CHECK(turn.agent_error.find("timed out") != std::string::npos);
      CHECK(turn.truncated);
    }
  }
  CHECK(timeouts > 0);
  CHECK(played > timeouts);
  CHECK(log.text().find("timed out") != std::string::npos);
}

TEST_CASE("batched agents: act() calls of at most batch_size prompts; lock-step: all slots at once") {
  struct Recording : agents::RandomAgent {
    std::vector<size_t> sizes;
    std::vector<agents::AgentReply> act(const std::vector<agents::AgentPrompt>& prompts) override {
      sizes.push_back(prompts.size());
      return RandomAgent::act(prompts);
    }
  };
  Recording batched, lock_step;
  const Trace a = trace_of(batched, small_config(false), 2);  // batch_size 2
  const Trace b = trace_of(lock_step, small_config(true), 2);
  CHECK(a == b);
  CHECK(*std::max_element(batched.sizes.begin(), batched.sizes.end()) == 2u);
  CHECK(lock_step.sizes == std::vector<size_t>(14, 5u));
}

TEST_CASE("episode seeds: first_episode_seed + episode id, distinct and reproducible") {
  std::vector<trainer::RolloutBatch> first, second;
  run(false, 3, &first);
  run(true, 3, &second);
  std::set<uint64_t> seeds;
  for (size_t k = 0; k < first.size(); ++k) {
    for (size_t r = 0; r < first[k].turns.size(); ++r) {
      const auto& turn = first[k].turns[r];
      CHECK(turn.episode_seed == second[k].turns[r].episode_seed);
      CHECK(turn.episode_seed == small_config(false).first_episode_seed + turn.episode_id);
      CHECK(turn.episode_id % 5 == static_cast<uint64_t>(turn.slot));
      seeds.insert(turn.episode_seed);
    }
  }
  CHECK(seeds.size() > 5u);  // fresh seeds on auto-reset
}

TEST_CASE("grouped slots begin their k-th episodes from one seed") {
  agents::RandomAgent agent;
  trainer::RolloutConfig config = small_config(false);
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
  trainer::Rollout uninterrupted(counting_env, agent, small_config(false));
  uninterrupted.collect();
  trainer::Rollout before(counting_env, agent, small_config(false));
  before.collect();
  const nlohmann::json state = nlohmann::json::parse(before.state().dump());  // as a checkpoint stores it
  size_t replies_in_flight = 0;
  for (const auto& slot : state.at("slots")) replies_in_flight += slot.at("replies").size();
  CHECK(replies_in_flight > 0);
  trainer::Rollout resumed(counting_env, agent, small_config(false));
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
    auto config = small_config(false);
    config.n_env = 4;
    return config;
  }());
  CHECK_THROWS_AS(wrong_size.restore(state), std::invalid_argument);
}

TEST_CASE("invalid-action penalty, terminated vs truncated") {
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
  trainer::Rollout rollout(counting_env, agent, config);
  const auto batch = rollout.collect();
  // Turn 0: invalid -> default "wait", penalty; turn 1: finish on step 2 -> terminated, reward 1.
  CHECK_FALSE(batch.turns[0].valid_action);
  CHECK(batch.turns[0].action == 0);
  CHECK(batch.turns[0].reward == doctest::Approx(-0.25));
  CHECK(batch.turns[1].terminated);
  CHECK_FALSE(batch.turns[1].truncated);
  CHECK(batch.turns[1].reward == doctest::Approx(1.0));
  REQUIRE(batch.finished_episodes.size() >= 1);
  CHECK(batch.finished_episodes[0].episode_return == doctest::Approx(0.75));
  CHECK(batch.turns[2].turn_index == 0);
}

TEST_CASE("binary reward: only a winning step's reward becomes 1; a rule change's stays as paid") {
  trainer::TurnSettings turn;
  turn.reply_format = envs::ReplyFormat::kActionTag;
  turn.binary_reward = true;
  trainer::EnvSlot slot(envs::make_env("babaisai/make_win", {{"rule_change_reward", 20}}), turn, 1);
  const uint64_t seed = 9200;
  slot.begin_episode(seed);
  std::vector<double> rewards;
  while (!slot.done()) {
    const int action = envs::expert_move(slot.env(), seed).action;
    rewards.push_back(slot.apply("ACTION: " + slot.env().actions()[action].name).reward);
  }
  REQUIRE(slot.env().progression() == 1.0);
  CHECK(rewards.back() == 1.0);
  rewards.pop_back();
  // The win rule is made before the win; no step before it is binarised to 1.
  CHECK(*std::max_element(rewards.begin(), rewards.end()) >= 0.2);
  CHECK(*std::max_element(rewards.begin(), rewards.end()) < 1.0);
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

TEST_CASE("episode runner: the expert agent answers each prompt from the state that prompt shows") {
  agents::ExpertAgent agent("ACTION: {action}");
  std::vector<trainer::EpisodeJob> jobs;
  for (size_t k = 0; k < 3; ++k) jobs.push_back({"crafter/balrog", 500 + k, k});
  trainer::EpisodeRunnerConfig config;
  config.parallel_episodes = 3;
  config.turn.max_turns = 60;
  config.turn.reply_format = envs::ReplyFormat::kActionTag;
  size_t episodes = 0;
  trainer::run_episodes(jobs, [](const std::string& id) { return envs::make_env(id); }, agent, config, [&](trainer::EpisodeLog&& log) {
    // Replaying the episode alone, the expert gives the same action in every state.
    auto env = envs::make_env(log.job.env_id);
    env->reset(log.job.seed);
    std::set<std::string> actions;
    for (size_t t = 0; t < log.turns.size(); ++t) {
      const int expected = envs::expert_action(*env, trainer::episode_turn_seed(log.job.seed, static_cast<int>(t)));
      const std::string& name = env->actions()[static_cast<size_t>(expected)].name;
      CHECK(log.turns[t].reply == "ACTION: " + name);
      CHECK(log.turns[t].action == name);
      actions.insert(name);
      env->step(expected);
    }
    CHECK(actions.size() >= 4u);  // it moves, collects and crafts: not one fixed reply
    ++episodes;
  });
  CHECK(episodes == 3u);
  agents::AgentPrompt detached;
  CHECK_THROWS_WITH(agent.act({detached}), doctest::Contains("does not carry its env"));
  CHECK_THROWS_AS(agents::ExpertAgent("no placeholder"), std::invalid_argument);
}

TEST_CASE("the expert agent writes its aim before its action where the template asks for it") {
  agents::ExpertAgent agent("{aim} ACTION: {action}", envs::ExpertSight::kView);
  auto babyai = envs::make_env("babyai/goto", {{"num_dists", 8}});
  auto baba = envs::make_env("babaisai/goto_win");
  std::set<std::string> aims;
  for (uint64_t seed = 40; seed < 60; ++seed) {
    babyai->reset(seed);
    baba->reset(seed);
    agents::AgentPrompt on_babyai, on_baba;
    on_babyai.env = babyai.get();
    on_babyai.seed = on_baba.seed = seed;
    on_baba.env = baba.get();
    const std::vector<agents::AgentReply> replies = agent.act({on_babyai, on_baba});
    const envs::ExpertMove move = envs::expert_move(*babyai, seed, envs::ExpertSight::kView);
    CHECK(replies[0].text == move.aim + " ACTION: " + babyai->actions()[static_cast<size_t>(move.action)].name);
    aims.insert(move.aim);
    const envs::ExpertMove baba_move = envs::expert_move(*baba, seed);
    CHECK_FALSE(baba_move.aim.empty());
    CHECK(replies[1].text == baba_move.aim + " ACTION: " + baba->actions()[static_cast<size_t>(baba_move.action)].name);
  }
  CHECK(aims.size() >= 10u);  // object lines, not one fixed word
}

TEST_CASE("episode runner: at most parallel_episodes at once; a failed request ends its episode") {
  ScrambledAgent agent(5, [](const agents::AgentPrompt& prompt) { return prompt.seed % 3 == 0; });
  std::vector<trainer::EpisodeJob> jobs;
  for (size_t k = 0; k < 10; ++k) jobs.push_back({"babyai/goto", 100 + k, k});
  trainer::EpisodeRunnerConfig config;
  config.parallel_episodes = 3;
  config.turn.max_turns = 6;
  std::set<size_t> keys;
  size_t errors = 0;
  LogCapture log;
  trainer::run_episodes(jobs, [](const std::string& id) { return envs::make_env(id); }, agent, config,
                        [&](trainer::EpisodeLog&& log) {
                          CHECK(keys.insert(log.job.key).second);
                          CHECK((log.terminated || log.truncated));
                          for (size_t t = 0; t < log.turns.size(); ++t) {
                            const bool failed = !log.turns[t].error.empty();
                            errors += failed;
                            CHECK(failed == (trainer::episode_turn_seed(log.job.seed, static_cast<int>(t)) % 3 == 0));
                            if (failed) CHECK(t + 1 == log.turns.size());  // the episode ended there
                          }
                        });
  CHECK(keys.size() == 10u);
  CHECK(errors > 0);
  CHECK(agent.max_outstanding > 1u);
  CHECK(agent.max_outstanding <= 3u);
  CHECK(log.text().find("gave no reply") != std::string::npos);
}

TEST_CASE("progress line: episodes, turns, rate and ETA") {
  trainer::ProgressLine progress("sweep", 4);
  CHECK(progress.line().find("sweep: 0/4 episodes, 0 turns") == 0);
  CHECK(progress.line().find("ETA ?") != std::string::npos);
  progress.add_turn();
  progress.add_episode();
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  const std::string line = progress.line();
  CHECK(line.find("sweep: 1/4 episodes, 1 turns, ") == 0);
  CHECK(line.find(" turns/s, ETA ") != std::string::npos);
  CHECK(line.find("ETA ?") == std::string::npos);
  CHECK(trainer::ProgressLine("collect", 0, 10).line().find("0 episodes, 0/10 turns") != std::string::npos);
}

TEST_CASE("episode runner: the progress line comes on a timer while replies are awaited") {
  serve::OpenAiStubServer server([](int, const nlohmann::json&) { return serve::ChatStubReply{200, "turn left", 150}; });
  agents::HttpAgentConfig http;
  http.base_url = server.base_url();
  agents::HttpAgent agent(http);
  std::vector<trainer::EpisodeJob> jobs = {{"babyai/goto", 1, 0}, {"babyai/goto", 2, 1}};
  trainer::EpisodeRunnerConfig config;
  config.turn.max_turns = 3;
  config.progress_s = 0.1;
  config.progress_label = "sweep";
  LogCapture log;
  size_t lines_before_first_episode = 0;
  trainer::run_episodes(jobs, [](const std::string& id) { return envs::make_env(id); }, agent, config, [&](trainer::EpisodeLog&&) {
    if (lines_before_first_episode == 0) {
      const std::string text = log.text();
      for (size_t at = text.find("sweep: 0/2 episodes"); at != std::string::npos; at = text.find("sweep: 0/2 episodes", at + 1)) {
        ++lines_before_first_episode;
      }
    }
  });
  CHECK(lines_before_first_episode >= 2);  // three turns of 150 ms: lines every 0.1 s meanwhile
  CHECK(log.text().find("sweep: 2/2 episodes, 6 turns") != std::string::npos);  // and a last one
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

TEST_CASE("on_turn_finished reports every turn played once, in time order per slot, with its row's final record") {
  agents::RandomAgent agent;
  trainer::RolloutConfig config = small_config(false);
  std::vector<std::pair<size_t, trainer::TurnRecord>> seen;
  config.on_turn_finished = [&](size_t row, const trainer::TurnRecord& turn) { seen.emplace_back(row, turn); };
  trainer::Rollout rollout(counting_env, agent, config);
  for (int c = 0; c < 2; ++c) {
    seen.clear();
    const trainer::RolloutBatch batch = rollout.collect();
    REQUIRE(seen.size() == batch.turns.size());
    std::set<size_t> rows;
    std::map<int, int> last_turn_of_slot;
    for (const auto& [row, turn] : seen) {
      CHECK(rows.insert(row).second);
      const trainer::TurnRecord& final_record = batch.turns.at(row);
      CHECK(turn.episode_id == final_record.episode_id);
      CHECK(turn.turn_index == final_record.turn_index);
      CHECK(turn.reply == final_record.reply);
      CHECK(turn.reward == final_record.reward);
      CHECK(turn.done() == final_record.done());
      CHECK(turn.response_ids == final_record.response_ids);
      // A slot's turns are reported in time order.
      const int t = static_cast<int>(row) / config.n_env;
      if (last_turn_of_slot.count(final_record.slot)) CHECK(last_turn_of_slot[final_record.slot] == t - 1);
      last_turn_of_slot[final_record.slot] = t;
    }
  }
}
