// Rollouts over env workers (`env.workers`): slots spread over `turnrl env-server` processes on
// loopback give the in-process records; a worker killed mid-collection costs no turn and
// duplicates none; a worker that comes back is used again. Every wait is bounded.
#include <doctest/doctest.h>
#include <signal.h>

#include <atomic>
#include <chrono>
#include <fstream>
#include <map>
#include <set>
#include <thread>

#include <zmq_addon.hpp>

#include "agents/random_agent.h"
#include "envs/env_lost.h"
#include "envs/registry.h"
#include "envs/server/env_client.h"
#include "rollout_test_env.h"
#include "server_process.h"
#include "temp_dir.h"
#include "trainer/rollout/rollout.h"
#include "trainer/rollout/slot_fibers.h"
#include "trainer/rollout/worker_env.h"
#include "trainer/rollout/worker_pool.h"
#include "trainer/config/train_config.h"

using namespace turnrl;
using namespace std::chrono_literals;
using test::ServerProcess;
using Clock = std::chrono::steady_clock;

namespace {

// Arithmetic in several turns: a random reply is rarely right, so most episodes run to their
// 6-turn limit and straddle the 10-turn collections.
const char* const kEnv = "arith/multi";
const nlohmann::json kOptions = {{"max_value", 20}};

trainer::RolloutConfig small_config() {
  trainer::RolloutConfig config;
  config.n_env = 6;
  config.e_len = 10;
  config.seed = 7;
  config.first_episode_seed = 5000;
  return config;
}

std::shared_ptr<trainer::WorkerPool> pool_over(const std::vector<std::string>& endpoints,
                                               std::chrono::milliseconds timeout = 1000ms) {
  return std::make_shared<trainer::WorkerPool>(trainer::WorkerPoolOptions{endpoints, timeout, 100ms});
}

trainer::Rollout::EnvFactory remote_envs(const std::shared_ptr<trainer::WorkerPool>& pool) {
  return [pool](int slot) { return std::make_unique<trainer::WorkerEnv>(pool, slot % pool->size(), kEnv, kOptions); };
}

std::unique_ptr<envs::Env> local_env(int) { return envs::make_env(kEnv, kOptions); }

/** A random agent that runs `action` before its `at`-th call (0-based, counted over its life). */
class TriggerAgent : public agents::RandomAgent {
 public:
  TriggerAgent(int at, std::function<void()> action) : at_(at), action_(std::move(action)) {}
  std::vector<agents::AgentReply> act(const std::vector<agents::AgentPrompt>& prompts) override {
    if (calls_++ == at_) action_();
    return RandomAgent::act(prompts);
  }

 private:
  int at_;
  std::function<void()> action_;
  int calls_ = 0;
};

/** (episode id, turn index) of every turn; fails on a duplicate. */
void add_turns(const trainer::RolloutBatch& batch, std::set<std::pair<uint64_t, int>>& seen) {
  for (const auto& turn : batch.turns) {
    const bool first = seen.emplace(turn.episode_id, turn.turn_index).second;
    CHECK_MESSAGE(first, "duplicate turn ", turn.episode_id, "/", turn.turn_index);
  }
}

/** Throws from `depth` frames down, each with a buffer on the stack (so with ASan redzones). */
[[gnu::noinline]] void throw_from(int depth) {
  volatile char buffer[64];
  buffer[0] = static_cast<char>(depth);
  if (depth == 0) throw envs::EnvLost("test", "lost");
  throw_from(depth - 1);
  buffer[1] = buffer[0];
}

bool wait_until_up(const trainer::WorkerPool& pool, int worker, std::chrono::milliseconds limit) {
  const Clock::time_point deadline = Clock::now() + limit;
  while (!pool.is_up(worker) && Clock::now() < deadline) std::this_thread::sleep_for(20ms);
  return pool.is_up(worker);
}

}  // namespace

TEST_CASE("slots spread over two env servers give the in-process records") {
  ServerProcess first, second;
  auto pool = pool_over({first.endpoint(), second.endpoint()});
  agents::RandomAgent agent;
  trainer::Rollout remote(remote_envs(pool), agent, small_config());
  trainer::Rollout local(local_env, agent, small_config());
  CHECK(pool->envs_on(0) == 3);  // slot i lives on worker i % 2
  CHECK(pool->envs_on(1) == 3);
  for (int c = 0; c < 3; ++c) {
    const trainer::RolloutBatch got = remote.collect();
    const trainer::RolloutBatch expected = local.collect();
    REQUIRE(got.turns.size() == 60u);
    CHECK(got.restarts.empty());
    for (size_t r = 0; r < got.turns.size(); ++r) {
      const auto &a = got.turns[r], &b = expected.turns[r];
      INFO("collection " << c << " row " << r);
      CHECK(a.slot == b.slot);
      CHECK(a.episode_id == b.episode_id);
      CHECK(a.turn_index == b.turn_index);
      CHECK(a.episode_seed == b.episode_seed);
      CHECK(a.reply == b.reply);
      CHECK(a.action == b.action);
      CHECK(a.valid_action == b.valid_action);
      CHECK(a.reward == b.reward);
      CHECK(a.terminated == b.terminated);
      CHECK(a.truncated == b.truncated);
    }
    REQUIRE(got.bootstrap.size() == expected.bootstrap.size());
    for (size_t i = 0; i < got.bootstrap.size(); ++i) {
      REQUIRE(got.bootstrap[i].has_value() == expected.bootstrap[i].has_value());
      if (!got.bootstrap[i]) continue;
      const auto &a = got.bootstrap[i]->messages, &b = expected.bootstrap[i]->messages;
      REQUIRE(a.size() == b.size());
      for (size_t m = 0; m < a.size(); ++m) {
        CHECK(a[m].role == b[m].role);
        CHECK(a[m].content == b[m].content);
      }
    }
    CHECK(got.finished_episodes.size() == expected.finished_episodes.size());
  }
}

TEST_CASE("a worker killed mid-collection: exact turn count, nothing duplicated, restarts recorded") {
  ServerProcess doomed, survivor;
  const std::string doomed_endpoint = doomed.endpoint();
  auto pool = pool_over({doomed_endpoint, survivor.endpoint()});
  trainer::RolloutConfig config = small_config();
  config.lock_step = true;  // one agent call per turn of every slot: the kill lands on a known turn
  TriggerAgent agent(config.e_len + 3, [&] { REQUIRE(doomed.signal_and_wait(SIGKILL, 5s).has_value()); });
  trainer::Rollout rollout(remote_envs(pool), agent, config);

  std::set<std::pair<uint64_t, int>> seen;
  std::map<uint64_t, uint64_t> seed_of;  // episode id -> seed, over every turn played
  auto record = [&](const trainer::RolloutBatch& batch) {
    REQUIRE(batch.turns.size() == 60u);
    add_turns(batch, seen);
    for (const auto& turn : batch.turns) seed_of[turn.episode_id] = turn.episode_seed;
  };
  const trainer::RolloutBatch before = rollout.collect();
  record(before);
  CHECK(before.restarts.empty());
  const Clock::time_point start = Clock::now();
  const trainer::RolloutBatch batch = rollout.collect();
  CHECK(Clock::now() - start < 10s);
  record(batch);

  // Every slot homed on the dead worker (the even ones) restarted once, on the survivor.
  std::set<int> restarted;
  int truncations = 0;
  for (const auto& restart : batch.restarts) {
    INFO(trainer::describe(restart));
    CHECK(restarted.insert(restart.slot).second);
    CHECK(restart.worker == doomed_endpoint);
    CHECK(restart.reason.find("no reply to '") != std::string::npos);  // the first failure, or "given up on after:" it
    CHECK(restart.episode_id != restart.lost_episode_id);
    CHECK(restart.episode_id % 6 == static_cast<uint64_t>(restart.slot));
    // A fresh seed by the slot's own rule: never one that another episode of the run played.
    CHECK(restart.seed == config.first_episode_seed + restart.episode_id);
    for (const auto& [id, seed] : seed_of) {
      if (id != restart.episode_id) CHECK(seed != restart.seed);
    }
    // The abandoned episode's last turn here is truncated; the new one starts in the next row.
    int last_row = -1;
    for (int t = 0; t < batch.e_len; ++t) {
      if (batch.at(t, restart.slot).episode_id == restart.lost_episode_id) last_row = t;
    }
    if (last_row < 0) {  // lost before its first turn
      CHECK(restart.lost_turns == 0);
      continue;
    }
    ++truncations;
    REQUIRE(last_row + 1 < batch.e_len);
    const auto& last = batch.at(last_row, restart.slot);
    CHECK(last.truncated);
    CHECK_FALSE(last.terminated);
    CHECK(last.turn_index + 1 == restart.lost_turns);
    CHECK(batch.at(last_row + 1, restart.slot).episode_id == restart.episode_id);
    CHECK(batch.at(last_row + 1, restart.slot).turn_index == 0);
  }
  CHECK(restarted == std::set<int>{0, 2, 4});
  CHECK(truncations > 0);
  CHECK_FALSE(pool->is_up(0));
  CHECK(pool->envs_on(1) == 6);

  const trainer::RolloutBatch after = rollout.collect();
  record(after);
  CHECK(after.restarts.empty());
}

TEST_CASE("a worker that comes back takes new episodes again") {
  auto coming_back = std::make_unique<ServerProcess>();
  ServerProcess steady;
  const std::string endpoint = coming_back->endpoint();
  auto pool = pool_over({endpoint, steady.endpoint()});
  agents::RandomAgent agent;
  trainer::Rollout rollout(remote_envs(pool), agent, small_config());
  rollout.collect();
  REQUIRE(coming_back->signal_and_wait(SIGKILL, 5s).has_value());
  coming_back.reset();
  CHECK(rollout.collect().restarts.size() == 3u);
  CHECK(pool->envs_on(1) == 6);

  coming_back = std::make_unique<ServerProcess>("", endpoint);
  REQUIRE(wait_until_up(*pool, 0, 5s));
  // Every episode ends within 6 turns, so each home-0 slot begins one in the next collection: there.
  const trainer::RolloutBatch batch = rollout.collect();
  CHECK(batch.restarts.empty());
  CHECK(pool->envs_on(0) == 3);
  CHECK(pool->envs_on(1) == 3);
}

TEST_CASE("a server restarted before anyone noticed: its slots restart there, the worker stays up") {
  auto restarted = std::make_unique<ServerProcess>();
  ServerProcess steady;
  const std::string endpoint = restarted->endpoint();
  // A timeout longer than a restart takes (sanitizer builds start slowly), so no ping gives up on it.
  auto pool = pool_over({endpoint, steady.endpoint()}, 10000ms);
  agents::RandomAgent agent;
  trainer::Rollout rollout(remote_envs(pool), agent, small_config());
  rollout.collect();
  REQUIRE(restarted->signal_and_wait(SIGKILL, 5s).has_value());
  restarted = std::make_unique<ServerProcess>("", endpoint);
  std::this_thread::sleep_for(300ms);  // the connection comes back by itself (ZeroMQ reconnects)
  REQUIRE(pool->is_up(0));
  const trainer::RolloutBatch batch = rollout.collect();
  REQUIRE(batch.restarts.size() == 3u);
  for (const auto& restart : batch.restarts) {
    CHECK_MESSAGE(restart.reason.find("holds no env") != std::string::npos, restart.reason);
  }
  CHECK(pool->is_up(0));
  CHECK(pool->envs_on(0) == 3);
  CHECK(pool->envs_on(1) == 3);
}

// What the heartbeat's ping needs when a server dies with it in flight and is restarted at once
// (the case above, when the kill lands on a ping): another copy within the timeout.
TEST_CASE("a ping that gets no reply is sent again within the timeout; a step is sent once") {
  zmq::context_t context(1);
  zmq::socket_t server(context, zmq::socket_type::router);
  server.set(zmq::sockopt::linger, 0);
  server.bind("tcp://127.0.0.1:*");
  const std::string endpoint = server.get(zmq::sockopt::last_endpoint);
  std::map<std::string, int> received;  // request type -> copies
  std::atomic<bool> stop = false;
  std::thread fake([&] {  // answers hello and the second copy of a ping (and later ones), nothing else
    namespace proto = envs::server;
    while (!stop) {
      std::vector<zmq::message_t> frames;
      zmq::pollitem_t item{server.handle(), 0, ZMQ_POLLIN, 0};
      zmq::poll(&item, 1, 20ms);
      if (!zmq::recv_multipart(server, std::back_inserter(frames), zmq::recv_flags::dontwait)) continue;
      const proto::Request request = proto::decode_request(frames.back().to_string_view(), 8);
      const std::string type(proto::request_type(request.body));
      const int copy = ++received[type];
      std::string reply;
      if (type == "hello") reply = proto::encode_reply("hello", request.id, {{"version", 1}, {"slots", 8}});
      if (type == "ping" && copy >= 2) reply = proto::encode_reply("pong", request.id, nlohmann::json::object());
      if (reply.empty()) continue;
      frames.back().rebuild(reply.data(), reply.size());
      zmq::send_multipart(server, frames);
    }
  });
  {
    envs::server::EnvClient client(endpoint, 2000ms);
    const Clock::time_point start = Clock::now();
    CHECK_NOTHROW(client.ping());
    CHECK(Clock::now() - start >= 900ms);  // answered at its second copy
    CHECK_THROWS_AS(client.step({{0, 1}}), envs::server::ServerUnreachable);
  }
  stop = true;
  fake.join();
  CHECK(received["ping"] >= 2);  // more only on a machine too busy to answer within a second
  CHECK(received["step"] == 1);
}

TEST_CASE("a step on a lost env restarts the slot's episode, in-process too") {
  // Slot 0's env is lost on its 5th step of the run: the rollout's side without servers.
  class LosingEnv : public test::CountingEnv {
   public:
    envs::StepResult step(int action) override {
      if (++steps_in_run_ == 5) throw envs::EnvLost("test://lost", "gone");
      return CountingEnv::step(action);
    }

   private:
    int steps_in_run_ = 0;
  };
  struct WaitingAgent : agents::Agent {  // never "finish": every episode runs to its time limit
    std::string name() const override { return "waiting"; }
    std::vector<agents::AgentReply> act(const std::vector<agents::AgentPrompt>& prompts) override {
      agents::AgentReply wait;
      wait.text = "wait";
      return std::vector<agents::AgentReply>(prompts.size(), wait);
    }
  } agent;
  trainer::RolloutConfig config = small_config();
  config.n_env = 2;
  config.e_len = 5;
  config.first_episode_seed = 0;  // time limit 3 + seed % 4: episode 0 has 3 turns, episode 2 has 5
  trainer::Rollout rollout(
      [](int slot) -> std::unique_ptr<envs::Env> {
        if (slot == 0) return std::make_unique<LosingEnv>();
        return std::make_unique<test::CountingEnv>();
      },
      agent, config);
  const trainer::RolloutBatch batch = rollout.collect();
  REQUIRE(batch.turns.size() == 10u);
  std::set<std::pair<uint64_t, int>> seen;
  add_turns(batch, seen);
  // Slot 0: episode 0 in rows 0-2, episode 2 in row 3, its second step lost; episode 4 from row 4.
  REQUIRE(batch.restarts.size() == 1u);
  const auto& restart = batch.restarts.front();
  CHECK(restart.slot == 0);
  CHECK(restart.worker == "test://lost");
  CHECK(restart.reason == "gone");
  CHECK(restart.lost_episode_id == 2u);
  CHECK(restart.lost_seed == 2u);
  CHECK(restart.lost_turns == 1);
  CHECK(restart.episode_id == 4u);
  CHECK(restart.seed == 4u);
  CHECK(batch.at(3, 0).episode_id == 2u);
  CHECK(batch.at(3, 0).truncated);
  CHECK_FALSE(batch.at(3, 0).terminated);
  CHECK(batch.at(4, 0).episode_id == 4u);
  CHECK(batch.at(4, 0).turn_index == 0);
  CHECK(batch.bootstrap[0].has_value());
  CHECK(batch.bootstrap[0]->episode_id == 4u);
  // Slot 1 untouched: episode 1 (4 turns), then episode 3. Finished: episodes 0 and 1, not the lost one.
  CHECK(batch.at(3, 1).episode_id == 1u);
  CHECK(batch.at(4, 1).episode_id == 3u);
  CHECK(batch.finished_episodes.size() == 2u);
  CHECK(rollout.state()["slots"][0]["episodes_begun"] == 3);  // a resume replays episode 4
}

TEST_CASE("env.workers is validated with the config") {
  const test::TempDir dir("turnrl_workers");
  const std::string path = dir / "workers.yaml";
  auto load_with = [&](const std::string& env_lines) {
    std::ofstream(path) << "model:\n  path: m\nenv:\n  id: arith/multi\n" << env_lines;
    return trainer::TrainConfig::load(path);
  };
  CHECK(load_with("").env.workers.empty());
  const trainer::TrainConfig with_workers = load_with("  workers: [tcp://127.0.0.1:5555, 'ipc:///tmp/w']\n  worker_timeout: 2.5\n");
  CHECK(with_workers.env.workers == std::vector<std::string>{"tcp://127.0.0.1:5555", "ipc:///tmp/w"});
  std::ofstream(path) << with_workers.to_yaml();  // the resolved config a run saves reads back
  const trainer::TrainConfig resolved = trainer::TrainConfig::load(path);
  CHECK(resolved.env.workers == with_workers.env.workers);
  CHECK(resolved.env.worker_timeout == 2.5);
  CHECK(resolved.env.worker_heartbeat == 5.0);
  CHECK_THROWS_WITH_AS(load_with("  workers: [127.0.0.1:5555]\n"),
                       (path + ":5: env.workers: '127.0.0.1:5555' must be tcp://HOST:PORT or ipc://PATH").c_str(),
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(load_with("  workers: ['tcp://127.0.0.1:*']\n"), doctest::Contains("needs a port"), std::invalid_argument);
  CHECK_THROWS_WITH_AS(load_with("  workers: [tcp://a:1, tcp://a:1]\n"), doctest::Contains("'tcp://a:1' is listed twice"),
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(load_with("  worker_timeout: 0\n"), doctest::Contains("env.worker_timeout: must be > 0"),
                       std::invalid_argument);
  std::remove(path.c_str());
}

TEST_CASE("a pool with no live worker is a clear error") {
  CHECK_THROWS_WITH_AS(trainer::WorkerPool(trainer::WorkerPoolOptions{{"tcp://127.0.0.1:1"}, 300ms, 100ms}),
                       doctest::Contains("no env worker answers: tcp://127.0.0.1:1: env server tcp://127.0.0.1:1: no reply"),
                       std::runtime_error);
}

TEST_CASE("a full worker passes new envs on; when every worker is full the error says why") {
  ServerProcess first, second;  // 8 slots each
  auto pool = pool_over({first.endpoint(), second.endpoint()});
  std::vector<std::unique_ptr<trainer::WorkerEnv>> envs;
  for (int i = 0; i < 12; ++i) envs.push_back(std::make_unique<trainer::WorkerEnv>(pool, 0, kEnv, kOptions));
  CHECK(pool->envs_on(0) == 8);
  CHECK(pool->envs_on(1) == 4);
  CHECK(pool->is_up(0));  // refusing is no failure
  for (int i = 0; i < 4; ++i) envs.push_back(std::make_unique<trainer::WorkerEnv>(pool, 1, kEnv, kOptions));
  CHECK_THROWS_WITH_AS(trainer::WorkerEnv(pool, 0, kEnv, kOptions), doctest::Contains("no env worker can take it"),
                       std::runtime_error);
  CHECK_THROWS_WITH_AS(trainer::WorkerEnv(pool, 0, kEnv, kOptions), doctest::Contains("no free slot"), std::runtime_error);
  envs.pop_back();
  trainer::WorkerEnv last(pool, 0, kEnv, kOptions);
  CHECK(last.worker() == 1);
  last.reset(3);
  CHECK(last.step(0).reward == 0.0);
}

// A lost env server throws on the slot's fiber. Under AddressSanitizer every such throw must
// unpoison the frames it unwinds on the fiber's stack, not give up on them for a stack that spans
// from the fiber to the thread's own (trainer/rollout/fiber_stacks.h): left poisoned, they gave
// false stack-use-after-scope reports. Two threads, like ranks.
TEST_CASE("exceptions on slot fibers of two threads: caught, rethrown, no false ASan report") {
  std::atomic<int> caught = 0;
  auto slot = [&caught](size_t index, const std::function<bool()>&) {
    for (int i = 0; i < 20; ++i) {
      try {
        throw_from(static_cast<int>(4 + index + i % 5));
      } catch (const envs::EnvLost&) {
        ++caught;
      }
    }
    throw_from(2);
  };
  auto run = [&slot] {
    for (int round = 0; round < 2; ++round) CHECK_THROWS_AS(trainer::run_slot_fibers(4, slot), envs::EnvLost);
  };
  std::thread other(run);
  run();
  other.join();
  CHECK(caught == 2 * 2 * 4 * 20);
}
