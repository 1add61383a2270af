// arith/*: random-playout invariants (OpenSpiel style), determinism, the correct answer sequence,
// the problem's own arithmetic checked independently, and the reply parser on numeric answers.
#include <doctest/doctest.h>

#include <random>
#include <set>

#include <nlohmann/json.hpp>

#include "envs/reply_parser.h"
#include "envs/arith/arith_env.h"
#include "envs/registry.h"

using namespace turnrl::envs;
using turnrl::envs::arith::ArithEnv;

namespace {

const std::vector<std::string> kIds = {"arith/single", "arith/multi"};

ArithEnv& as_arith(Env& env) { return dynamic_cast<ArithEnv&>(env); }

/** The chain evaluated here, by the operation's wording, not by Operation::apply. */
int evaluate(const arith::Problem& problem, size_t operations) {
  int value = problem.start;
  for (size_t i = 0; i < operations; ++i) {
    const std::string text = problem.operations[i].text();
    const int operand = std::stoi(text.substr(text.rfind(' ') + 1));
    if (text.rfind("add ", 0) == 0) value += operand;
    if (text.rfind("subtract ", 0) == 0) value -= operand;
    if (text.rfind("multiply by ", 0) == 0) value *= operand;
    if (text.rfind("divide by ", 0) == 0) {
      CHECK(value % operand == 0);
      value /= operand;
    }
  }
  return value;
}

}  // namespace

TEST_CASE("arith random playouts: rewards in range, episodes end within max_steps, progression grows") {
  for (const std::string& id : kIds) {
    for (const nlohmann::json& options : {nlohmann::json::object(), nlohmann::json{{"steps", 5}, {"max_value", 50}}}) {
      CAPTURE(id);
      CAPTURE(options.dump());
      auto env = make_env(id, options);
      std::mt19937_64 rng(42);
      int wins = 0;
      for (uint64_t seed = 0; seed < 60; ++seed) {
        env->reset(seed);
        double previous_progression = env->progression();
        CHECK(previous_progression == 0.0);
        int turns = 0;
        double total = 0.0;
        StepResult result;
        while (!result.terminated && !result.truncated) {
          REQUIRE(turns < env->max_steps());
          // Half the turns answer correctly, the others pick any action (almost always wrong).
          const int action = rng() % 2 ? as_arith(*env).correct_answers().front()
                                       : static_cast<int>(rng() % static_cast<uint64_t>(env->num_actions()));
          result = env->step(action);
          ++turns;
          CHECK((result.reward == 0.0 || result.reward == 1.0));
          CHECK((result.reward == 0.0 || result.terminated));  // the only reward is the final answer's
          CHECK(env->progression() >= previous_progression);
          CHECK(env->progression() <= 1.0);
          previous_progression = env->progression();
          total += result.reward;
        }
        CHECK(turns <= env->max_steps());
        CHECK((result.truncated == (turns == env->max_steps() && !result.terminated)));
        CHECK(total == (env->progression() == 1.0 ? 1.0 : 0.0));
        CHECK_THROWS_AS(env->step(0), std::logic_error);
        wins += total == 1.0;
      }
      CHECK(wins > 0);
      CHECK(wins < 60);
    }
  }
}

TEST_CASE("arith: the same seed gives the same episode, different seeds different problems") {
  for (const std::string& id : kIds) {
    CAPTURE(id);
    auto a = make_env(id), b = make_env(id);
    std::set<std::string> statements;
    for (uint64_t seed = 0; seed < 50; ++seed) {
      a->reset(seed);
      b->reset(seed);
      statements.insert(a->goal());
      std::mt19937_64 rng(seed);
      for (int turn = 0; turn < a->max_steps(); ++turn) {
        CHECK(a->observe_text().long_term == b->observe_text().long_term);
        CHECK(a->state_hash() == b->state_hash());
        const int action = static_cast<int>(rng() % 4 == 0 ? rng() % 1000 : as_arith(*a).correct_answers().front());
        const StepResult ra = a->step(action), rb = b->step(action);
        CHECK(ra.reward == rb.reward);
        CHECK(ra.terminated == rb.terminated);
        if (ra.terminated || ra.truncated) break;
      }
    }
    CHECK(statements.size() > 45);
  }
}

TEST_CASE("arith problems: every result is exact, in [1, max_value], and matches the statement") {
  for (int max_value : {2, 30, 999}) {
    auto env = make_env("arith/multi", nlohmann::json{{"steps", 6}, {"max_value", max_value}});
    for (uint64_t seed = 0; seed < 200; ++seed) {
      env->reset(seed);
      const arith::Problem& problem = as_arith(*env).problem();
      REQUIRE(problem.operations.size() == 6);
      for (size_t i = 0; i < problem.results.size(); ++i) {
        CHECK(problem.results[i] == evaluate(problem, i + 1));
        CHECK(problem.results[i] >= 1);  // so the default action "0" never scores
        CHECK(problem.results[i] <= max_value);
        CHECK(env->goal().find(problem.operations[i].text()) != std::string::npos);
      }
    }
  }
}

TEST_CASE("arith: the correct answer sequence gets reward 1") {
  for (const std::string& id : kIds) {
    for (uint64_t seed : {0u, 1u, 17u}) {
      CAPTURE(id);
      auto env = make_env(id, nlohmann::json{{"steps", 4}});
      env->reset(seed);
      const std::vector<int> answers = as_arith(*env).correct_answers();
      CHECK(answers.size() == (id == "arith/single" ? 1u : 4u));
      CHECK(answers.back() == evaluate(as_arith(*env).problem(), 4));
      double total = 0.0;
      StepResult result;
      for (int answer : answers) {
        CHECK_FALSE(result.terminated);
        CHECK(env->reference_answer() == std::to_string(answer));  // the answer this turn asks for
        result = env->step(answer);
        total += result.reward;
      }
      CHECK(result.terminated);
      CHECK(total == 1.0);
      CHECK(env->progression() == 1.0);
      CHECK(env->reference_answer().empty());  // nothing is asked once the episode is over
    }
  }
}

TEST_CASE("arith/multi: a wrong result is reported, asked again, and repeats one anchor state") {
  auto env = make_env("arith/multi");
  env->reset(3);
  const std::vector<int> answers = as_arith(*env).correct_answers();
  const int wrong = answers[0] == 1 ? 2 : 1;
  CHECK(env->step(answers[0]).reward == 0.0);  // confirmed, not yet rewarded
  const std::string confirmed = env->state_hash();
  CHECK(env->observe_text().long_term.find("operation 2") != std::string::npos);
  env->step(wrong == answers[1] ? wrong + 1 : wrong);
  const std::string after_wrong = env->state_hash();
  CHECK(after_wrong != confirmed);
  CHECK(env->observe_text().long_term.find("wrong") != std::string::npos);
  CHECK(env->observe_text().long_term.find("operation 2") != std::string::npos);
  env->step(answers[1] + 1 <= 999 ? answers[1] + 1 : answers[1] - 1);  // another wrong value: the same state
  CHECK(env->state_hash() == after_wrong);
  // Only wrong answers: the episode is truncated after 2 * steps turns with no reward.
  env->reset(3);
  for (int turn = 1; turn <= env->max_steps(); ++turn) {
    const StepResult result = env->step(0);
    CHECK(result.reward == 0.0);
    CHECK(result.truncated == (turn == env->max_steps()));
  }
}

TEST_CASE("arith/single: one wrong reply ends the episode with no reward") {
  auto env = make_env("arith/single");
  env->reset(8);
  const int answer = as_arith(*env).correct_answers().front();
  const StepResult result = env->step(answer == 999 ? 998 : answer + 1);
  CHECK(result.terminated);
  CHECK(result.reward == 0.0);
  CHECK(env->progression() == 0.0);
}

TEST_CASE("arith replies: the text after ACTION: names the number") {
  auto env = make_env("arith/single");
  env->reset(5);
  std::mt19937_64 rng(0);
  const ParsedReply plain = parse_reply("THINK: 12 * 3 = 36\nACTION: 36", *env, ReplyFormat::kActionTag, rng);
  CHECK(plain.valid);
  CHECK(plain.action == 36);
  const ParsedReply dotted = parse_reply("ACTION: 407.\nDone", *env, ReplyFormat::kActionTag, rng);
  CHECK(dotted.valid);
  CHECK(dotted.action == 407);
  const ParsedReply out_of_range = parse_reply("ACTION: 1000", *env, ReplyFormat::kActionTag, rng);
  CHECK_FALSE(out_of_range.valid);
  CHECK(out_of_range.action == env->default_action());
  CHECK(env->actions()[env->default_action()].name == "0");
  CHECK_THROWS_AS(make_env("arith/multi", nlohmann::json{{"steps", 0}}), std::invalid_argument);
  CHECK_THROWS_AS(make_env("arith/multi", nlohmann::json{{"digits", 3}}), std::invalid_argument);
}
