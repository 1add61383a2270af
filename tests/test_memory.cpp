#include <doctest/doctest.h>

#include "envs/registry.h"
#include "memory/history.h"

using turnrl::memory::History;
using turnrl::memory::HistoryConfig;
using turnrl::memory::PromptLayout;

TEST_CASE("BALROG layout: first prompt of babyai/goto seed 0 (balrog.md 7.1 B1)") {
  auto env = turnrl::envs::make_env("babyai/goto");
  env->reset(0);
  History history{HistoryConfig{}};
  history.reset(env->instruction_prompt());
  history.add_observation(env->observe_text());
  const auto messages = history.messages();
  REQUIRE(messages.size() == 2);
  CHECK(messages[0].role == "user");
  CHECK(messages[0].content.rfind("You are an agent playing a simple navigation game. Your goal is to go to the green key.", 0) == 0);
  CHECK(messages[1].role == "user");
  CHECK(messages[1].content ==
        "Current Observation:\n"
        "a wall 6 steps forward\n"
        "a wall 2 steps left\n"
        "a green key 1 step right and 2 steps forward\n\n"
        "You always have to output one of the above actions at a time and no other text. You always have to output an "
        "action until the episode terminates.");
}

TEST_CASE("BALROG layout: window of 2n events, older observations, short-term only when current") {
  HistoryConfig config;
  config.max_turns = 2;
  History history(config);
  history.reset("INSTR");
  for (int t = 0; t < 4; ++t) {
    history.add_observation({"obs" + std::to_string(t), "inv" + std::to_string(t)});
    history.add_reply("reply" + std::to_string(t), "act");
  }
  history.add_observation({"obs4", "inv4"});
  const auto messages = history.messages();
  // 4 events: reply2, obs3, reply3, obs4 (the oldest event is a reply, as in BALROG's deque).
  REQUIRE(messages.size() == 5);
  CHECK(messages[0].content == "INSTR");
  CHECK(messages[1].role == "assistant");
  CHECK(messages[1].content == "reply2");
  CHECK(messages[2].content == "Observation:\nobs3");
  CHECK(messages[3].content == "reply3");
  CHECK(messages[4].content.rfind("Current Observation:\ninv4\nobs4\n\nYou always", 0) == 0);
}

TEST_CASE("transcript layout: every prompt extends the previous one; no window; the suffix ends every observation") {
  HistoryConfig config;
  config.layout = PromptLayout::kTranscript;
  config.max_turns = 1;  // a window's size: the transcript keeps every turn anyway
  config.suffix = "SUFFIX";
  History history(config);
  history.reset("INSTR");
  std::vector<turnrl::memory::ChatMessage> previous;
  for (int t = 0; t < 5; ++t) {
    history.add_observation({"obs" + std::to_string(t), t == 0 ? "" : "inv" + std::to_string(t)});
    const auto messages = history.messages();
    REQUIRE(messages.size() == static_cast<size_t>(2 + 2 * t));
    for (size_t i = 0; i < previous.size(); ++i) {
      CHECK(messages[i].role == previous[i].role);
      CHECK(messages[i].content == previous[i].content);
    }
    CHECK(messages.back().content == (t == 0 ? "Observation:\nobs0\n\nSUFFIX" : "Observation:\ninv" + std::to_string(t) + "\nobs" + std::to_string(t) + "\n\nSUFFIX"));
    history.add_reply(t == 2 ? "" : "reply" + std::to_string(t), "act");  // an empty reply stays: the next prompt still extends this one
    previous = history.messages();
    CHECK(previous.back().role == "assistant");
  }
  CHECK(previous.front().content == "INSTR");
}

TEST_CASE("Verlog layout: system prompt, previous plan, executed action for older replies") {
  HistoryConfig config;
  config.layout = PromptLayout::kVerlog;
  config.max_turns = 2;
  config.suffix = turnrl::memory::verlog_format_instruction();
  History history(config);
  history.reset("SYS");
  history.add_observation({"o0", ""});
  CHECK(history.messages().size() == 2);
  history.add_reply("THINK: a\nACTION: go forward", "go forward");
  history.add_observation({"o1", ""});
  history.add_reply("THINK: b\nACTION: turn left", "turn left");
  history.add_observation({"o2", ""});
  const auto messages = history.messages();
  REQUIRE(messages.size() == 6);
  CHECK(messages[0].role == "system");
  CHECK(messages[1].content == "Observation:\no0");
  CHECK(messages[2].content == "go forward");  // outside the reasoning window
  CHECK(messages[3].content == "Observation:\no1");
  CHECK(messages[4].content == "Previous plan:\nTHINK: b\nACTION: turn left");
  CHECK(messages[5].content ==
        "Current Observation:\no2\n\nWhat will you do next? Please respond in the following format:\n"
        "    THINK: step-by-step reasoning\n    ACTION: One valid action from the allowed set.");
  CHECK(turnrl::memory::verlog_format_instruction("idle, up, right, down, left")
            .ends_with("allowed set: idle, up, right, down, left"));
}

TEST_CASE("token budget drops whole oldest turns and keeps the current observation") {
  HistoryConfig config;
  config.max_turns = 8;
  config.suffix = "";
  config.token_budget = 40;
  History history(config);
  history.reset("I");
  for (int t = 0; t < 6; ++t) {
    history.add_observation({"observation number " + std::to_string(t), ""});
    history.add_reply("reply " + std::to_string(t), "a");
  }
  history.add_observation({"current", ""});
  auto characters = [](const std::vector<turnrl::memory::ChatMessage>& messages) {
    size_t n = 0;
    for (const auto& m : messages) n += m.content.size();
    return n;
  };
  const auto full = history.messages();
  const auto cut = history.messages(characters);
  CHECK(characters(full) > 40);
  CHECK(characters(cut) <= 40);
  REQUIRE(cut.size() >= 2);
  CHECK(cut.back().content == "Current Observation:\ncurrent");
  // The window restarts at an observation: no reply without the observation it answered.
  CHECK(cut[1].role == "user");
  // Every remaining message is unchanged text from the full prompt (nothing cut mid-turn).
  for (size_t i = 1; i < cut.size(); ++i) CHECK(cut[i].content == full[full.size() - cut.size() + i].content);
  // A budget smaller than the current observation still yields instruction + current.
  config.token_budget = 1;
  History tight(config);
  tight.reset("I");
  tight.add_observation({"o", ""});
  tight.add_reply("r", "a");
  tight.add_observation({"now", ""});
  CHECK(tight.messages(characters).size() == 2);
}
