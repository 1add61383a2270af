// The env-independent parts: field comparison, golden file reading, action parsing, registry errors.
#include <doctest/doctest.h>

#include <fstream>
#include <random>

#include "envs/reply_parser.h"
#include "envs/golden.h"
#include "envs/registry.h"
#include "temp_dir.h"

using namespace turnrl::envs;
using nlohmann::json;

namespace {

/** A minimal env with BabyAI-like names, to exercise the parser without a port. */
class ToyEnv : public Env {
 public:
  explicit ToyEnv(ActionTextRules rules) : rules_(std::move(rules)) {}
  const std::string& id() const override { return id_; }
  void reset(uint64_t) override {}
  StepResult step(int action) override {
    check_action(action);
    return {};
  }
  const std::vector<ActionSpec>& actions() const override { return actions_; }
  int default_action() const override { return 2; }
  const ActionTextRules& text_rules() const override { return rules_; }
  int max_steps() const override { return 10; }
  std::string instruction_prompt() const override { return ""; }
  TextObservation observe_text() const override { return {}; }
  std::string render_ascii() const override { return ""; }
  double progression() const override { return 0; }
  std::string serialize_state() const override { return {}; }  // stateless

 private:
  std::string id_ = "toy";
  std::vector<ActionSpec> actions_ = {{"turn left", ""}, {"turn right", ""}, {"go forward", ""}, {"Move North", ""}};
  ActionTextRules rules_;
};

}  // namespace

TEST_CASE("first_difference finds the first differing field") {
  CHECK_FALSE(first_difference(json{{"a", 1}, {"b", {1, 2}}}, json{{"a", 1.0}, {"b", {1, 2}}}, "r"));
  auto diff = first_difference(json{{"grid", {"ab", "cd"}}}, json{{"grid", {"ab", "ce"}}}, "r");
  REQUIRE(diff);
  CHECK(diff->path == "r.grid[1]");
  CHECK(diff->expected == "\"cd\"");
  CHECK(first_difference(json{{"x", 0.1}}, json{{"x", 0.1 + 1e-17 * 100}}, "r"));
  CHECK(first_difference(json::array({1, 2}), json::array({1}), "r")->path == "r.size");
  CHECK(first_difference(json{{"a", nullptr}}, json{{"a", 0}}, "r"));
}

TEST_CASE("read_jsonl rejects malformed files with the file and line") {
  const turnrl::test::TempDir dir("turnrl_env_core");
  const std::string path = dir / "bad.jsonl";
  {
    std::ofstream out(path);
    out << "{\"type\": \"reset\"}\n{not json\n";
  }
  try {
    read_jsonl(path);
    FAIL("expected an error");
  } catch (const std::runtime_error& e) {
    CHECK(std::string(e.what()).find(path + ":2") != std::string::npos);
  }
  CHECK_THROWS_AS(read_jsonl("/no/such/folder/file.jsonl.gz"), std::runtime_error);
  {
    std::ofstream out(path);
    out << "{\"type\": \"reset\", \"format\": \"nobody\"}\n";
  }
  CHECK_THROWS_AS(replay_golden_file(path), std::runtime_error);
}

TEST_CASE("malformed golden records are std::runtime_errors naming the line, never a hang or UB") {
  const turnrl::test::TempDir dir("turnrl_env_core");
  const std::string path = dir / "malformed.jsonl";
  const std::string babyai_reset = R"({"type":"reset","env_id":"BabyAI-MixedTrainLocal-v0/goto","seed":0)";
  struct Case {
    const char* what;
    std::string lines;
    const char* message_part;
  };
  // Found with tests/fuzz/fuzz_golden: each escaped as another exception type, stalled level
  // generation, or cast a float to an integer (undefined behaviour).
  const Case cases[] = {
      {"a Crafter header without its fields", R"({"type":"reset","format":"crafter-golden-v1","seed":0})", "the first record: malformed"},
      {"a Crafter area out of range", R"({"type":"reset","format":"crafter-golden-v1","seed":0,"area":2,"view":9,"size":9,"length":1})",
       "option area must be"},
      {"more distractors than the registry allows", babyai_reset + R"(,"num_dists":64})", ":1: malformed record: env babyai/goto: option num_dists"},
      {"a float seed", R"({"type":"reset","env_id":"BabyAI-MixedTrainLocal-v0/goto","seed":-1.5})", ":1: malformed record: expected an integer"},
      {"an action out of range", babyai_reset + "}\n" + R"({"type":"step","action":99})", ":2: malformed record"},
      {"a type that is no string", R"({"type":false,"env_id":"BabyAI-MixedTrainLocal-v0/goto","seed":0})", ":1: field 'type' must be"},
      {"a number beyond double", babyai_reset + "}\n" + R"({"type":"step","action":1e99999})", ":2: invalid JSON"},
      {"a float action", babyai_reset + "}\n" + R"({"type":"step","action":1e300})", ":2: malformed record: expected an integer"},
  };
  for (const Case& c : cases) {
    INFO(c.what);
    std::ofstream(path) << c.lines << "\n";
    CHECK_THROWS_WITH_AS(replay_golden_file(path), doctest::Contains(c.message_part), std::runtime_error);
  }
}

TEST_CASE("unknown env ids list the valid ids") {
  try {
    make_env("no-such-env");
    FAIL("expected an error");
  } catch (const std::invalid_argument& e) {
    CHECK(std::string(e.what()).find("valid ids") != std::string::npos);
  }
}

TEST_CASE("BALROG naive matching is exact after the letter filter") {
  ToyEnv env({});
  std::mt19937_64 rng(0);
  CHECK(parse_reply("go forward.", env, ReplyFormat::kBalrogNaive, rng).valid);
  CHECK(parse_reply("  turn left\n", env, ReplyFormat::kBalrogNaive, rng).action == 0);
  const ParsedReply upper = parse_reply("Go forward", env, ReplyFormat::kBalrogNaive, rng);
  CHECK_FALSE(upper.valid);
  CHECK(upper.action == 2);
  CHECK_FALSE(parse_reply("1. turn left", env, ReplyFormat::kBalrogNaive, rng).valid);
  // Python's strip and \s are Unicode-aware: a no-break space is kept (invalid), other bytes dropped.
  CHECK_FALSE(parse_reply("go\u00a0forward", env, ReplyFormat::kBalrogNaive, rng).valid);
  CHECK(parse_reply("go\u00a0forward", env, ReplyFormat::kBalrogNaive, rng).candidate == "go\u00a0forward");
  CHECK(parse_reply("\u00a0\u2003go forward\u3000", env, ReplyFormat::kBalrogNaive, rng).valid);  // stripped
  CHECK(parse_reply("go fo\u00e9rward", env, ReplyFormat::kBalrogNaive, rng).valid);  // a non-ASCII letter is dropped
  CHECK(parse_reply(std::string("go \xff\xfe" "forward"), env, ReplyFormat::kBalrogNaive, rng).valid);  // invalid UTF-8 dropped
  CHECK_FALSE(parse_reply("go\u200bforward", env, ReplyFormat::kBalrogNaive, rng).candidate.empty());
  CHECK(parse_reply("go\u200bforward", env, ReplyFormat::kBalrogNaive, rng).candidate == "goforward");  // U+200B is no space
}

TEST_CASE("the reply parser says where the action text starts") {
  ToyEnv env({});
  std::mt19937_64 rng(0);
  const std::string reply = "THINK: ACTION: no\nACTION: turn left";
  const ParsedReply parsed = parse_reply(reply, env, ReplyFormat::kActionTag, rng);
  CHECK(parsed.has_marker);
  CHECK(parsed.marker_begin == reply.rfind("ACTION:"));
  CHECK(parsed.action_begin == reply.rfind("ACTION:") + 7);
  const ParsedReply bare = parse_reply("turn left", env, ReplyFormat::kActionTag, rng);
  CHECK_FALSE(bare.has_marker);
  CHECK(bare.action_begin == 0);
  CHECK(history_entry_text(reply, parsed, "turn left", HistoryEntry::kReplyWithExecuted, ReplyFormat::kActionTag) ==
        "THINK: ACTION: no\n\nACTION: turn left.\n");
}

TEST_CASE("ACTION: replies are normalised and translated") {
  ActionTextRules rules;
  rules.translations["turnleft"] = {"turn left"};
  ToyEnv env(rules);
  std::mt19937_64 rng(0);
  CHECK(parse_reply("I think... ACTION: Turn_Left", env, ReplyFormat::kActionTag, rng).action == 0);
  CHECK(parse_reply("ACTION: turnleft", env, ReplyFormat::kActionTag, rng).action == 0);
  CHECK(parse_reply("action: go forward", env, ReplyFormat::kActionTag, rng).action == 2);
  CHECK(parse_reply("ACTION: x ACTION: turn right", env, ReplyFormat::kActionTag, rng).action == 1);
  const ParsedReply garbled = parse_reply(std::string("\x01\xff\0zz", 5), env, ReplyFormat::kActionTag, rng);
  CHECK_FALSE(garbled.valid);
  CHECK(garbled.action == env.default_action());
  CHECK_FALSE(parse_reply("", env, ReplyFormat::kActionTag, rng).valid);
}

TEST_CASE("title-case rules and synonyms with several targets") {
  ActionTextRules rules;
  rules.letter_case = ActionTextRules::Case::kTitle;
  rules.cut_at_newline = true;
  rules.drop_trailing_punctuation = true;
  rules.translations["Move Northwest"] = {"Move North", "turn left"};
  ToyEnv env(rules);
  std::mt19937_64 rng(0);
  CHECK(parse_reply("move north.\nbecause", env, ReplyFormat::kActionTag, rng).action == 3);
  int seen[4] = {0, 0, 0, 0};
  for (int i = 0; i < 50; ++i) ++seen[parse_reply("move northwest", env, ReplyFormat::kActionTag, rng).action];
  CHECK(seen[0] > 0);
  CHECK(seen[3] > 0);
}

TEST_CASE("parenthesised groups dropped after the configured word only") {
  ActionTextRules rules;
  rules.letter_case = ActionTextRules::Case::kTitle;
  rules.drop_parenthesised_after = "Move";
  ToyEnv env(rules);
  std::mt19937_64 rng(0);
  CHECK(parse_reply("ACTION: move north (towards the tree)", env, ReplyFormat::kActionTag, rng).action == 3);
  CHECK(parse_reply("ACTION: move north (a)(b) ", env, ReplyFormat::kActionTag, rng).action == 3);
  CHECK_FALSE(parse_reply("ACTION: move (a) north", env, ReplyFormat::kActionTag, rng).valid);  // "Move  North"
  CHECK_FALSE(parse_reply("ACTION: move north (unclosed", env, ReplyFormat::kActionTag, rng).valid);
  rules.drop_parenthesised_after.clear();
  ToyEnv plain(rules);
  CHECK_FALSE(parse_reply("ACTION: move north (towards the tree)", plain, ReplyFormat::kActionTag, rng).valid);
}

TEST_CASE("out-of-range actions throw") {
  ToyEnv env({});
  CHECK_THROWS_AS(env.step(4), std::out_of_range);
  CHECK_THROWS_AS(env.step(-1), std::out_of_range);
}

TEST_CASE("feedback line is BALROG's") {
  CHECK(invalid_action_feedback("Noop") ==
        "\n\nYour previous output did not contain a valid action. Defaulted to action: Noop\n\nObservation:\n");
}

TEST_CASE("the skeleton env (corridor): random-playout invariants, seeds, the shortest path wins") {
  for (const std::string id : {"corridor/short", "corridor/long"}) {
    auto env = make_env(id);
    auto twin = make_env(id);
    std::mt19937_64 rng(7);
    for (uint64_t seed = 0; seed < 200; ++seed) {
      INFO(id << " seed " << seed);
      env->reset(seed);
      twin->reset(seed);
      CHECK(env->serialize_state() == twin->serialize_state());  // same seed, same episode
      CHECK(env->observe_text().long_term.find("The exit is") == 0);
      int turns = 0;
      bool done = false;
      double total = 0;
      while (!done) {
        const StepResult step = env->step(std::uniform_int_distribution<int>(0, env->num_actions() - 1)(rng));
        ++turns;
        total += step.reward;
        CHECK((step.reward == 0.0 || step.reward == 1.0));
        CHECK_FALSE((step.terminated && step.truncated));
        CHECK(step.terminated == (env->progression() == 1.0));
        done = step.terminated || step.truncated;
      }
      CHECK(turns <= env->max_steps());
      CHECK(total == env->progression());
      CHECK_THROWS_AS(env->step(0), std::logic_error);
      // Following the observation reaches the exit in exactly the distance it names.
      twin->reset(seed);
      const std::string text = twin->observe_text().long_term;
      const int distance = std::stoi(text.substr(std::string("The exit is ").size()));
      const int toward = text.find("right") != std::string::npos ? 1 : 0;
      for (int k = 0; k < distance; ++k) {
        const StepResult step = twin->step(toward);
        CHECK(step.terminated == (k + 1 == distance));
      }
      CHECK(twin->progression() == 1.0);
    }
  }
  CHECK_THROWS_AS(make_env("corridor/short", {{"length", 1}}), std::invalid_argument);
}
