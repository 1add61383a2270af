// The env server, its C++ clients and the Python client: golden replay through the wire,
// malformed messages, heartbeats and a killed server. Loopback only; every wait is bounded.
#include <doctest/doctest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <optional>
#include <random>
#include <thread>

#include <zmq.hpp>
#include <zmq_addon.hpp>

#include "envs/env_outputs.h"
#include "envs/golden.h"
#include "envs/registry.h"
#include "envs/server/env_client.h"
#include "envs/server/env_server.h"
#include "envs/server/protocol.h"
#include "envs/server/remote_env.h"
#include "server_process.h"
#include "temp_dir.h"
#include "test_util.h"

namespace turnrl::envs::server {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;
using test::ServerProcess;
using nlohmann::json;

// One short golden file per family.
const char* const kGoldenFiles[] = {"golden/babyai/public__BabyAI-MixedTrainLocal-v0__goto.jsonl.gz",
                                    "golden/baba/public__env__goto_win.jsonl.gz",
                                    "golden/crafter_text/feedback/seed_0.jsonl.gz"};

/** A server on a free loopback port, served by a thread of this process. */
class ServerThread {
 public:
  explicit ServerThread(int slots = 8, std::chrono::milliseconds client_timeout = 60s)
      : server_({"tcp://127.0.0.1:*", slots, client_timeout}), thread_([this] { server_.run(stop_); }) {}
  ~ServerThread() {
    stop_ = true;
    thread_.join();
  }
  const std::string& endpoint() const { return server_.endpoint(); }

 private:
  EnvServer server_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

/** A bare socket for sending anything at all; `kind` dealer or req. */
class RawClient {
 public:
  explicit RawClient(const std::string& endpoint, zmq::socket_type kind = zmq::socket_type::dealer)
      : socket_(context_, kind) {
    socket_.set(zmq::sockopt::linger, 0);
    socket_.connect(endpoint);
  }
  /** The reply to `payload`, or nullopt after 5 s. */
  std::optional<json> exchange(const std::string& payload) {
    socket_.send(zmq::buffer(payload), zmq::send_flags::none);
    zmq::pollitem_t item{socket_.handle(), 0, ZMQ_POLLIN, 0};
    zmq::poll(&item, 1, 5000ms);
    zmq::message_t reply;
    if (!(item.revents & ZMQ_POLLIN) || !socket_.recv(reply, zmq::recv_flags::dontwait)) return std::nullopt;
    return json::parse(reply.to_string_view());
  }

 private:
  zmq::context_t context_{1};
  zmq::socket_t socket_;
};

EnvMaker remote_maker(const std::shared_ptr<EnvClient>& client) {
  return [client](const std::string& id, const json& options) { return std::make_unique<RemoteEnv>(client, id, options); };
}

void check_exact(const ReplayReport& report, const EnvApiScript& script, const std::string& file) {
  INFO(file);
  if (report.first_mismatch) {
    const auto& m = *report.first_mismatch;
    FAIL_CHECK("line " << m.line << " field " << m.field.path << ": expected " << m.field.expected << ", got "
                       << m.field.got);
  }
  CHECK(report.lines == static_cast<long>(script.lines.size()));
  CHECK(report.episodes > 0);
  CHECK(report.exact_episodes == report.episodes);
}

}  // namespace

TEST_CASE("golden files replay through a remote env, one per family") {
  ServerThread server;
  auto client = std::make_shared<EnvClient>(server.endpoint());
  CHECK(client->version() == kProtocolVersion);
  for (const char* file : kGoldenFiles) {
    const std::vector<json> records = read_jsonl(test::shared_path(file));
    const EnvApiScript script = client->golden_script(records);
    INFO(file);
    // The server's translation is the library's; babyai and baba reach every line, crafter its first episode.
    CHECK(script_json(script) == script_json(env_api_script(records)));
    CHECK(script.golden_lines == static_cast<long>(records.size()));
    if (std::string(file).find("crafter") == std::string::npos) {
      CHECK(script.lines.size() == records.size());
    } else {
      CHECK(script.lines.size() > 100);
      CHECK(script.lines.size() < records.size());
    }
    check_exact(replay_env_api_script(script, [](const std::string& id, const json& options) { return make_env(id, options); }), script, file);
    check_exact(replay_env_api_script(script, remote_maker(client)), script, file);
  }
}

TEST_CASE("a golden replay through the server reports a changed record") {
  ServerThread server;
  auto client = std::make_shared<EnvClient>(server.endpoint());
  EnvApiScript script = client->golden_script(read_jsonl(test::shared_path(kGoldenFiles[0])));
  REQUIRE(script.lines.size() > 3);
  SUBCASE("observation text") { script.lines[3].expected["observation"]["long_term"] = "a wall somewhere"; }
  SUBCASE("reward") { script.lines[3].expected["reward"] = 0.5; }
  SUBCASE("a field the env does not return") { script.lines[3].expected["no_such_output"] = 1; }
  const ReplayReport report = replay_env_api_script(script, remote_maker(client));
  REQUIRE(report.first_mismatch.has_value());
  CHECK(report.first_mismatch->line == 4);
  CHECK(report.exact_episodes == report.episodes - 1);
}

TEST_CASE("the batched client steps many slots in one message, as in-process envs step") {
  ServerThread server(8);
  EnvClient client(server.endpoint());
  const std::vector<std::string> ids = {"babyai/goto", "babyai/putnext", "babaisai/goto_win", "crafter/balrog"};
  std::vector<CreateItem> creates;
  std::vector<std::unique_ptr<Env>> local;
  for (size_t i = 0; i < 8; ++i) {
    creates.push_back({std::nullopt, ids[i % ids.size()], json::object()});
    local.push_back(make_env(ids[i % ids.size()]));
  }
  const std::vector<SlotInfo> infos = client.create(creates);
  REQUIRE(infos.size() == 8);
  std::vector<ResetItem> resets;
  for (size_t i = 0; i < 8; ++i) {
    CHECK(infos[i].env_id == ids[i % ids.size()]);
    CHECK(infos[i].actions.size() == local[i]->actions().size());
    resets.push_back({infos[i].slot, 100 + i});
    local[i]->reset(100 + i);
  }
  const std::vector<EpisodeStart> starts = client.reset(resets);
  for (size_t i = 0; i < 8; ++i) {
    CHECK(starts[i].slot == infos[i].slot);
    CHECK(starts[i].instruction_prompt == local[i]->instruction_prompt());
    CHECK(starts[i].observation.long_term == local[i]->observe_text().long_term);
  }
  std::mt19937 rng(7);
  for (int turn = 0; turn < 30; ++turn) {
    std::vector<StepItem> steps;
    std::vector<StepResult> expected;
    for (size_t i = 0; i < 8; ++i) {
      const int action = std::uniform_int_distribution<int>(0, local[i]->num_actions() - 1)(rng);
      steps.push_back({infos[i].slot, action});
      expected.push_back(local[i]->step(action));
    }
    const std::vector<StepOutcome> outcomes = client.step(steps);
    REQUIRE(outcomes.size() == 8);
    std::vector<ResetItem> again;
    for (size_t i = 0; i < 8; ++i) {
      CHECK(outcomes[i].slot == infos[i].slot);
      CHECK(step_outputs(*local[i], expected[i]) ==
            json({{"observation", observation_json(outcomes[i].observation)},
                  {"reward", outcomes[i].result.reward},
                  {"terminated", outcomes[i].result.terminated},
                  {"truncated", outcomes[i].result.truncated},
                  {"progression", outcomes[i].progression}}));
      if (expected[i].terminated || expected[i].truncated) {
        again.push_back({infos[i].slot, 1000u + turn});
        local[i]->reset(1000 + turn);
      }
    }
    if (!again.empty()) client.reset(again);
  }
}

TEST_CASE("reset and step replies written as text are nlohmann's bytes, for every env id") {
  // The server writes these replies without building a document; the reference is the document
  // made of envs::episode_outputs / step_outputs (episode_start_json, step_outcome_json).
  std::mt19937 rng(3);
  for (const std::string& id : env_ids()) {
    INFO(id);
    const std::unique_ptr<Env> env = make_env(id);
    env->reset(5);
    CHECK(encode_reset_reply(9, {episode_start(2, *env)}) ==
          encode_reply("reset", 9, {{"results", json::array({episode_start_json(2, *env)})}}));
    std::vector<StepOutcome> outcomes;
    json results = json::array();
    for (int turn = 0; turn < 40; ++turn) {
      const StepResult result = env->step(std::uniform_int_distribution<int>(0, env->num_actions() - 1)(rng));
      outcomes.push_back(step_outcome(turn, *env, result));
      results.push_back(step_outcome_json(turn, *env, result));
      if (result.terminated || result.truncated) env->reset(6 + turn);
    }
    CHECK(encode_step_reply(123456789012345ull, outcomes) ==
          encode_reply("step", 123456789012345ull, {{"results", results}}));
  }
  // What envs rarely produce: escapes, control bytes, UTF-8 (valid and not), awkward numbers, answers.
  const std::vector<std::string> texts = {"", "a \"quoted\" \\ back\nslash\t\r\b\f", std::string("nul\0 \x01\x1f\x7f", 9),
                                          "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80", "bad \xc3 \xff \xed\xa0\x80 \xf4\x90\x80\x80"};
  const std::vector<double> numbers = {0.0, -0.0, 1.0, -1.0, 0.1, 1e-4, 0.0001234, 1e15, 1e16, 1e300, 5e-324,
                                       0.045454545454545456, std::nan(""), INFINITY};
  for (size_t i = 0; i < texts.size() * numbers.size(); ++i) {
    const std::string& text = texts[i % texts.size()];
    const double number = numbers[i % numbers.size()];
    INFO(i);
    StepOutcome outcome{static_cast<int>(i), {number, i % 2 == 0, i % 3 == 0}, {text, texts[(i + 1) % texts.size()]},
                        number, i % 4 == 0 ? text + "!" : ""};
    json body = {{"observation", {{"long_term", outcome.observation.long_term}, {"short_term", outcome.observation.short_term}}},
                 {"reward", number}, {"terminated", outcome.result.terminated}, {"truncated", outcome.result.truncated},
                 {"progression", number}, {"slot", outcome.slot}};
    if (!outcome.reference_answer.empty()) body["reference_answer"] = outcome.reference_answer;
    CHECK(encode_step_reply(i, {outcome}) == encode_reply("step", i, {{"results", json::array({body})}}));
    EpisodeStart start{static_cast<int>(i), outcome.observation, text, texts[(i + 2) % texts.size()],
                       static_cast<int>(i) - 3, number, outcome.reference_answer};
    json start_body = {{"observation", body["observation"]}, {"instruction_prompt", start.instruction_prompt},
                       {"goal", start.goal}, {"max_steps", start.max_steps}, {"progression", number}, {"slot", start.slot}};
    if (!start.reference_answer.empty()) start_body["reference_answer"] = start.reference_answer;
    CHECK(encode_reset_reply(i, {start}) == encode_reply("reset", i, {{"results", json::array({start_body})}}));
  }
}

TEST_CASE("RemoteEnv answers the Env interface as the local env does") {
  ServerThread server;
  auto client = std::make_shared<EnvClient>(server.endpoint());
  for (const std::string id : {"babyai/pickup", "crafter/balrog", "arith/multi"}) {
    INFO(id);
    RemoteEnv remote(client, id);
    auto local = make_env(id);
    CHECK_THROWS_AS(remote.step(0), std::logic_error);
    CHECK_THROWS_AS(remote.observe_text(), std::logic_error);
    remote.reset(5);
    local->reset(5);
    CHECK(remote.id() == id);
    CHECK(remote.num_actions() == local->num_actions());
    for (int a = 0; a < local->num_actions(); ++a) {
      CHECK(remote.actions()[a].name == local->actions()[a].name);
      CHECK(remote.actions()[a].description == local->actions()[a].description);
    }
    CHECK(remote.default_action() == local->default_action());
    CHECK(remote.text_rules().translations == local->text_rules().translations);
    CHECK(remote.text_rules().letter_case == local->text_rules().letter_case);
    CHECK(remote.text_rules().cut_at_newline == local->text_rules().cut_at_newline);
    CHECK(remote.text_rules().drop_parenthesised_after == local->text_rules().drop_parenthesised_after);
    CHECK(remote.instruction_prompt() == local->instruction_prompt());
    CHECK(remote.goal() == local->goal());
    CHECK(remote.max_steps() == local->max_steps());
    CHECK(remote.render_ascii() == local->render_ascii());
    CHECK(remote.serialize_state() == local->serialize_state());  // binary bytes survive the hex round trip
    CHECK(remote.state_hash() == local->state_hash());
    CHECK(remote.reference_answer() == local->reference_answer());
    CHECK_THROWS_AS(remote.step(local->num_actions()), std::out_of_range);
    const int action = id == "arith/multi" ? std::stoi(local->reference_answer()) : 1;  // arith: a correct step moves the answer on
    remote.step(action);
    local->step(action);
    CHECK(remote.observe_text().short_term == local->observe_text().short_term);
    CHECK(remote.progression() == local->progression());
    CHECK(remote.reference_answer() == local->reference_answer());
  }
}

TEST_CASE("malformed messages get an error reply and the server keeps serving") {
  ServerThread server(4);
  RawClient raw(server.endpoint());
  // A slot of this client, created and reset, for the checks that need one.
  auto ok = raw.exchange(R"({"type":"create","id":1,"items":[{"slot":0,"env_id":"babyai/goto"}]})");
  REQUIRE(ok);
  REQUIRE((*ok)["type"] == "create");
  ok = raw.exchange(R"({"type":"reset","id":2,"items":[{"slot":0,"seed":3}]})");
  REQUIRE((*ok)["type"] == "reset");

  struct Case {
    const char* what;
    std::string payload;
    const char* message_part;
  };
  const Case cases[] = {
      {"not JSON", "{\"type\": \"step\", ", "not valid JSON"},
      {"binary garbage", std::string("\xff\x00\x01", 3), "not valid JSON"},
      {"not an object", "[1, 2, 3]", "JSON object"},
      {"no type", R"({"id":3})", "missing field 'type'"},
      {"unknown type", R"({"type":"fly","id":3})", "unknown message type 'fly'"},
      {"slot out of range", R"({"type":"step","id":3,"items":[{"slot":99,"action":0}]})", "field 'slot'"},
      {"slot without an env", R"({"type":"reset","id":3,"items":[{"slot":2,"seed":1}]})", "slot 2 holds no env"},
      {"bad action", R"({"type":"step","id":3,"items":[{"slot":0,"action":999}]})", "action 999 is out of range"},
      {"negative action", R"({"type":"step","id":3,"items":[{"slot":0,"action":-1}]})", "field 'action'"},
      {"unknown env id", R"({"type":"create","id":3,"items":[{"env_id":"chess"}]})", "unknown env id 'chess'"},
      {"bad env option", R"({"type":"create","id":3,"items":[{"env_id":"babyai/goto","options":{"nope":1}}]})",
       "unknown option 'nope'"},
      {"seed of the wrong type", R"({"type":"reset","id":3,"items":[{"slot":0,"seed":"1"}]})", "field 'seed'"},
      {"negative seed", R"({"type":"reset","id":3,"items":[{"slot":0,"seed":-4}]})", "field 'seed'"},
      {"items of the wrong type", R"({"type":"step","id":3,"items":{"slot":0}})", "non-empty array"},
      {"unknown field", R"({"type":"ping","id":3,"colour":"red"})", "unknown field 'colour'"},
      {"oversized batch", R"({"type":"step","id":3,"items":[{"slot":0,"action":0},{"slot":1,"action":0},)"
                          R"({"slot":2,"action":0},{"slot":3,"action":0},{"slot":0,"action":1}]})",
       "exceeds the limit of 4"},
      {"a slot twice", R"({"type":"step","id":3,"items":[{"slot":0,"action":0},{"slot":0,"action":1}]})",
       "appears twice"},
      {"unsupported version", R"({"type":"hello","id":3,"versions":[99]})", "no common protocol version"},
      {"bad golden records", R"({"type":"golden_script","id":3,"records":[{"type":"reset"}]})", "golden format"},
      // Found with tests/fuzz/fuzz_env_server and fuzz_protocol: a float cast to an integer (undefined
      // behaviour), and a version beyond int taken for version 1.
      {"a float action in golden records",
       R"({"type":"golden_script","id":3,"records":[{"type":"reset","env_id":"BabyAI-MixedTrainLocal-v0/goto",)"
       R"("seed":0,"text":"","mission":"","max_steps":1},{"type":"step","text":"","action":1e300}]})",
       "golden line 2: malformed record: expected an integer"},
      {"a version beyond int", R"({"type":"hello","id":3,"versions":[4294967297]})", "field 'version' must be an integer"},
  };
  for (const Case& c : cases) {
    INFO(c.what);
    const std::optional<json> reply = raw.exchange(c.payload);
    REQUIRE(reply.has_value());
    CHECK((*reply)["type"] == "error");
    CHECK((*reply)["message"].get<std::string>().find(c.message_part) != std::string::npos);
    // The id is echoed whenever it can be read, so a client can tell which request failed.
    CHECK((*reply)["id"] == (c.payload.find(R"("id":3)") != std::string::npos ? 3 : 0));
    const std::optional<json> pong = raw.exchange(R"({"type":"ping","id":4})");
    REQUIRE(pong.has_value());
    CHECK((*pong)["type"] == "pong");
    CHECK((*pong)["id"] == 4);
  }
  // Rejected batches left the slot as it was: the episode goes on from its reset.
  const auto step = raw.exchange(R"({"type":"step","id":5,"items":[{"slot":0,"action":2}]})");
  REQUIRE(step);
  CHECK((*step)["type"] == "step");
  // A REQ socket (with its empty delimiter frame) is served too.
  RawClient req(server.endpoint(), zmq::socket_type::req);
  const auto hello = req.exchange(R"({"type":"hello","id":1,"versions":[1]})");
  REQUIRE(hello);
  CHECK((*hello)["version"] == 1);
}

TEST_CASE("replies of the wrong shape are ServerErrors on the client side") {
  // Found with tests/fuzz/fuzz_protocol: a json::type_error escaped, and floats were cast to integers
  // (undefined behaviour).
  CHECK_THROWS_WITH_AS(decode_reply(R"({"type":"error","id":0,"message":5})", "step", 0),
                       doctest::Contains("(no message)"), ServerError);
  CHECK_THROWS_WITH_AS(decode_script(json::parse(R"({"golden_lines":1e300,"lines":[]})")),
                       doctest::Contains("malformed golden_script reply: expected an integer"), ServerError);
  const json step = json::parse(R"({"results":[{"slot":1.5,"reward":0,"terminated":false,"truncated":false,)"
                                R"("observation":{"long_term":"","short_term":""},"progression":0}]})");
  CHECK_THROWS_WITH_AS(decode_step_outcomes(step), doctest::Contains("malformed step reply"), ServerError);
}

TEST_CASE("randomly damaged requests all get a reply") {
  ServerThread server(2);
  RawClient raw(server.endpoint());
  const std::string valid[] = {
      R"({"type":"hello","id":1,"versions":[1]})",
      R"({"type":"create","id":2,"items":[{"slot":0,"env_id":"babyai/goto","options":{"num_dists":1}}]})",
      R"({"type":"reset","id":3,"items":[{"slot":0,"seed":12}]})",
      R"({"type":"step","id":4,"items":[{"slot":0,"action":2}]})",
      R"({"type":"render","id":5,"slot":0})",
      R"({"type":"close","id":6,"slots":[0]})",
      R"({"type":"golden_script","id":7,"records":[{"type":"reset","env_id":"env/goto_win","seed":0}]})",
  };
  std::mt19937 rng(11);
  auto pick = [&](size_t n) { return std::uniform_int_distribution<size_t>(0, n - 1)(rng); };
  int errors = 0;
  for (int i = 0; i < 3000; ++i) {
    std::string message = valid[pick(std::size(valid))];
    for (int edits = 1 + static_cast<int>(pick(3)); edits > 0; --edits) {
      const size_t at = pick(message.size());
      switch (pick(4)) {
        case 0: message[at] = static_cast<char>(pick(256)); break;
        case 1: message.erase(at, 1 + pick(8)); break;
        case 2: message = message.substr(0, at) + message.substr(pick(message.size()), 1 + pick(12)) + message.substr(at); break;
        default: message.resize(at); break;
      }
      if (message.empty()) message.push_back('{');
    }
    const std::optional<json> reply = raw.exchange(message);
    REQUIRE_MESSAGE(reply.has_value(), "no reply to " << message);
    REQUIRE((*reply)["type"].is_string());
    errors += (*reply)["type"] == "error";
  }
  CHECK(errors > 2000);  // most damage is caught; some edits leave a valid request
  const std::optional<json> pong = raw.exchange(R"({"type":"ping","id":9})");
  REQUIRE(pong.has_value());
  CHECK((*pong)["type"] == "pong");
}

TEST_CASE("slots belong to the client that created them") {
  ServerThread server(2);
  EnvClient owner(server.endpoint());
  EnvClient other(server.endpoint());
  const int slot = owner.create({{std::nullopt, "babyai/goto", json::object()}}).front().slot;
  CHECK_THROWS_WITH_AS(other.reset({{slot, 1}}), doctest::Contains("belongs to another client"), ServerError);
  CHECK_THROWS_WITH_AS(other.close({slot}), doctest::Contains("belongs to another client"), ServerError);
  // The second slot is the other client's; then the server is full.
  CHECK(other.create({{std::nullopt, "babyai/goto", json::object()}}).front().slot != slot);
  CHECK_THROWS_WITH_AS(other.create({{std::nullopt, "babyai/goto", json::object()}}), doctest::Contains("no free slot"),
                       ServerError);
  owner.close({slot});
  CHECK(other.create({{std::nullopt, "babyai/goto", json::object()}}).front().slot == slot);
}

TEST_CASE("a silent client loses its slots; a pinging one keeps them") {
  ServerThread server(4, 600ms);
  EnvClient silent(server.endpoint());
  EnvClient pinging(server.endpoint());
  const int silent_slot = silent.create({{std::nullopt, "babyai/goto", json::object()}}).front().slot;
  const int pinging_slot = pinging.create({{std::nullopt, "babyai/goto", json::object()}}).front().slot;
  for (int i = 0; i < 15; ++i) {  // 1.5 s: well past the timeout
    std::this_thread::sleep_for(100ms);
    pinging.ping();
  }
  CHECK(pinging.reset({{pinging_slot, 1}}).size() == 1);
  CHECK_THROWS_WITH_AS(silent.reset({{silent_slot, 1}}), doctest::Contains("holds no env"), ServerError);
}

TEST_CASE("a client detects a dead server within its timeout") {
  SUBCASE("no server at all") {
    int port = 0;
    {  // a port that was free a moment ago
      ServerThread probe(1);
      port = std::stoi(probe.endpoint().substr(probe.endpoint().rfind(':') + 1));
    }
    const Clock::time_point start = Clock::now();
    CHECK_THROWS_WITH_AS(EnvClient("tcp://127.0.0.1:" + std::to_string(port), 500ms), doctest::Contains("no reply"),
                         ServerError);
    CHECK(Clock::now() - start < 3s);
  }
  SUBCASE("server killed with SIGKILL") {
    ServerProcess process;
    auto client = std::make_shared<EnvClient>(process.endpoint(), 1000ms);
    RemoteEnv env(client, "babyai/goto");
    env.reset(0);
    env.step(0);
    REQUIRE(process.signal_and_wait(SIGKILL, 5s).has_value());
    const Clock::time_point start = Clock::now();
    CHECK_THROWS_WITH_AS(env.step(0), doctest::Contains("no reply to 'step'"), ServerError);
    const auto waited = Clock::now() - start;
    CHECK(waited >= 900ms);
    CHECK(waited < 3s);
    CHECK_THROWS_AS(client->ping(), ServerError);
  }
}

TEST_CASE("a late reply to a timed-out request is not taken for the next one") {
  // A fake server: answers hello, holds the first ping until the second arrives, then sends the
  // stale pong followed by an error reply to the second ping.
  zmq::context_t context(1);
  zmq::socket_t router(context, zmq::socket_type::router);
  router.set(zmq::sockopt::linger, 0);
  router.set(zmq::sockopt::rcvtimeo, 5000);
  router.bind("tcp://127.0.0.1:*");
  const std::string endpoint = router.get(zmq::sockopt::last_endpoint);
  std::thread fake([&] {
    auto receive = [&] {
      std::vector<zmq::message_t> frames;
      if (!zmq::recv_multipart(router, std::back_inserter(frames)) || frames.size() != 2) frames.clear();
      return frames;
    };
    auto answer = [&](std::vector<zmq::message_t>& frames, const std::string& reply) {
      const std::string client = frames.front().to_string();
      router.send(zmq::buffer(client), zmq::send_flags::sndmore);
      router.send(zmq::buffer(reply), zmq::send_flags::none);
    };
    std::vector<zmq::message_t> hello = receive();
    if (hello.empty()) return;
    answer(hello, encode_reply("hello", request_id_of(hello.back().to_string_view()), {{"version", 1}, {"slots", 1}}));
    std::vector<zmq::message_t> first = receive();
    std::vector<zmq::message_t> second = receive();
    if (first.empty() || second.empty()) return;
    answer(first, encode_reply("pong", request_id_of(first.back().to_string_view()), json::object()));
    answer(second, encode_error(request_id_of(second.back().to_string_view()), "the reply to the second ping"));
  });
  {
    EnvClient client(endpoint, 300ms);
    CHECK_THROWS_WITH_AS(client.ping(), doctest::Contains("no reply to 'ping'"), ServerError);
    CHECK_THROWS_WITH_AS(client.ping(), doctest::Contains("the reply to the second ping"), ServerError);
  }
  fake.join();
}

TEST_CASE("SIGTERM and SIGINT stop the server process cleanly") {
  for (int signal : {SIGTERM, SIGINT}) {
    ServerProcess process("--client-timeout 5");
    EnvClient client(process.endpoint(), 2000ms);
    client.ping();
    const std::optional<int> status = process.signal_and_wait(signal, 5s);
    REQUIRE(status.has_value());
    CHECK(WIFEXITED(*status));
    CHECK(WEXITSTATUS(*status) == 0);
  }
}

TEST_CASE("the python client replays golden files through a server process" * doctest::test_suite("python")) {
  ServerProcess process;
  // The package's golden replay (python/turnrl_env/golden.py), run from the source tree.
  const std::string package = std::string(TURNRL_SOURCE_DIR) + "/python";
  auto replay = [&](const std::string& files) {
    const std::string command = "PYTHONPATH='" + package + "' '" + TURNRL_PYTHON3 +
                                "' -m turnrl_env.golden replay --timeout 10 --server '" + process.endpoint() +
                                "' --golden " + files + " 2>&1";
    test::CommandResult result;
    FILE* pipe = popen(command.c_str(), "r");
    REQUIRE(pipe != nullptr);
    char buffer[4096];
    while (size_t n = std::fread(buffer, 1, sizeof buffer, pipe)) result.output.append(buffer, n);
    const int status = pclose(pipe);
    result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128;
    return result;
  };
  std::string files;
  for (const char* file : kGoldenFiles) files += " '" + test::shared_path(file) + "'";
  const test::CommandResult good = replay(files);
  INFO(good.output);
  CHECK(good.exit_code == 0);
  CHECK(good.output.find("all match") != std::string::npos);

  // One changed observation in a copy of a golden file: the replay must fail and say where.
  std::vector<json> records = read_jsonl(test::shared_path(kGoldenFiles[1]));
  records.at(5)["text"] = "Active rules:\nnothing is real";
  const test::TempDir dir("turnrl_env_server");
  const std::string changed = dir / "changed.jsonl.gz";
  write_jsonl_gz(changed, records);
  const test::CommandResult bad = replay("'" + changed + "'");
  INFO(bad.output);
  CHECK(bad.exit_code == 1);
  CHECK(bad.output.find("mismatch at line 6") != std::string::npos);
}

}  // namespace turnrl::envs::server
