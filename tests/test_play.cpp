// `turnrl play` shows the model's exact input: its prompts for a seed and a reply sequence are
// byte-identical to the ones the rollout builds, in each layout.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "agents/agent.h"
#include "agents/model/tokenizer.h"
#include "envs/registry.h"
#include "test_util.h"
#include "trainer/rollout/episode_runner.h"
#include "trainer/config/config_reader.h"
#include "trainer/rollout/turn_settings.h"

using namespace turnrl;

namespace {

/** Replies from a script and records the chat text of every prompt, as a local model would see it. */
class ScriptedAgent : public agents::Agent {
 public:
  ScriptedAgent(const agents::Tokenizer& tokenizer, std::vector<std::string> replies) : tokenizer_(tokenizer), replies_(std::move(replies)) {}
  std::string name() const override { return "scripted"; }
  std::vector<agents::AgentReply> act(const std::vector<agents::AgentPrompt>& prompts) override {
    std::vector<agents::AgentReply> out;
    for (const auto& prompt : prompts) {
      texts.push_back(tokenizer_.chat_text(prompt.messages, true));
      agents::AgentReply reply;
      reply.text = replies_.at(next_++);
      out.push_back(reply);
    }
    return out;
  }
  memory::TokenCounter token_counter() const override {
    return [this](const std::vector<memory::ChatMessage>& m) { return tokenizer_.encode_chat(m, true).size(); };
  }
  std::vector<std::string> texts;

 private:
  const agents::Tokenizer& tokenizer_;
  std::vector<std::string> replies_;
  size_t next_ = 0;
};

/** The text between each "--- prompt (N tokens) ---" line and "--- end of prompt ---". */
std::vector<std::string> shown_prompts(const std::string& output) {
  std::vector<std::string> prompts;
  size_t at = 0;
  while ((at = output.find("--- prompt (", at)) != std::string::npos) {
    const size_t begin = output.find('\n', at) + 1;
    const size_t end = output.find("--- end of prompt ---\n", begin);
    REQUIRE(end != std::string::npos);
    prompts.push_back(output.substr(begin, end - begin));
    at = end;
  }
  return prompts;
}

}  // namespace

TEST_CASE("play's prompts are the rollout's prompts, byte for byte, in every layout") {
  const std::string tokenizer_dir = test::shared_path("tokenizers/qwen");
  const agents::Tokenizer tokenizer = agents::Tokenizer::load(tokenizer_dir);
  const std::vector<std::string> replies = {"turn left", "I see it. ACTION: go forward", "123!", "ACTION: toggle", "go forward"};
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / "turnrl_test_play";
  std::filesystem::create_directories(dir);
  for (const std::string layout : {"balrog", "verlog", "compact"}) {
    for (const std::string format : {"balrog", "action-tag"}) {
      INFO(layout << " layout, " << format << " replies");
      const std::string file = (dir / (layout + "-" + format + ".yaml")).string();
      std::ofstream(file) << "env: {id: babyai/goto, options: {num_dists: 2}}\nturn:\n  layout: " << layout
                          << "\n  history: 2\n  token_budget: 400\n  reply_format: " << format << "\n  invalid_feedback: true\n";
      const trainer::TurnSettings turn = trainer::read_turn_settings(trainer::ConfigSection(file, trainer::load_yaml_file(file)["turn"], "turn"));

      ScriptedAgent agent(tokenizer, replies);
      trainer::EpisodeRunnerConfig runner;
      runner.parallel_episodes = 1;
      runner.turn = turn;
      runner.turn.max_turns = static_cast<int>(replies.size());
      trainer::run_episodes({{"babyai/goto", 11, 0}}, [](const std::string& id) { return envs::make_env(id, {{"num_dists", 2}}); },
                            agent, runner, [](trainer::EpisodeLog&&) {});

      std::string input;
      for (const auto& reply : replies) input += reply + "\n";
      const auto played = test::run_turnrl("play --config " + file + " --seed 11 --tokenizer " + tokenizer_dir, input);
      REQUIRE_MESSAGE(played.exit_code == 0, played.output);
      const std::vector<std::string> shown = shown_prompts(played.output);
      REQUIRE(agent.texts.size() >= 2u);
      REQUIRE(shown.size() >= agent.texts.size());
      for (size_t t = 0; t < agent.texts.size(); ++t) {
        INFO("turn " << t);
        CHECK(shown[t] == agent.texts[t]);
      }
      // The token count shown is the prompt's.
      const std::string header = "--- prompt (" + std::to_string(tokenizer.encode(agent.texts[0]).size()) + " tokens) ---";
      CHECK(played.output.find(header) != std::string::npos);
    }
  }
  std::filesystem::remove_all(dir);
}

TEST_CASE("play reports the parsed action, why it was a default, the reward, return and step") {
  const auto played = test::run_turnrl("play --env babyai/goto --seed 3", "fly away\nturn left\n:quit\n");
  REQUIRE_MESSAGE(played.exit_code == 0, played.output);
  CHECK(played.output.find("action: go forward (the default: 'fly away' names no action of this env)") != std::string::npos);
  CHECK(played.output.find("action: turn left\n") != std::string::npos);
  CHECK(played.output.find("| step 2 of 64") != std::string::npos);
  CHECK(played.output.find("return 0") != std::string::npos);
}
