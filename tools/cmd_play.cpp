// Interactive play: shows the exact text an LLM receives and runs replies through the same parser.
#include <cstdio>
#include <iostream>
#include <memory>
#include <string>

#include <unistd.h>

#include "envs/registry.h"
#include "tools/cli.h"
#include "tools/command.h"
#include "tools/env_options.h"
#include "trainer/env_slot.h"

namespace turnrl::tools {
namespace {

constexpr const char* kHelp =
    "Type a reply as the model would (e.g. 'go forward' or 'I will turn. ACTION: turn left').\n"
    "Commands: :reset  :seed N  :grid  :actions  :help  :quit\n";

/** One episode at a time through the rollouts' own turn logic (trainer::EnvSlot). */
struct Session {
  std::unique_ptr<trainer::EnvSlot> slot;
  uint64_t seed = 0;

  void reset(uint64_t new_seed) {
    seed = new_seed;
    slot->begin_episode(seed);
    std::printf("=== %s, seed %llu, up to %d turns ===\n", slot->env().id().c_str(),
                static_cast<unsigned long long>(seed), slot->env().max_steps());
    const auto messages = slot->prompt(nullptr);
    std::printf("--- instruction (first user message) ---\n%s\n", messages.front().content.c_str());
    show_observation();
  }

  /** The last user message of the prompt: the current observation as the model sees it. */
  void show_observation() const {
    std::printf("--- observation (turn %d) ---\n%s\n", slot->turn(), slot->prompt(nullptr).back().content.c_str());
  }

  void reply(const std::string& text) {
    if (slot->done()) {
      std::printf("The episode is over: use :reset or :seed N.\n");
      return;
    }
    const trainer::TurnOutcome outcome = slot->apply(text);
    const std::string& name = slot->env().actions()[outcome.action].name;
    if (outcome.valid) {
      std::printf("action: %s\n", name.c_str());
    } else {
      std::printf("action: %s (default; '%s' is not a valid action)\n", name.c_str(), outcome.candidate.c_str());
    }
    std::printf("reward: %g\n", outcome.env_reward);
    if (outcome.done()) {
      std::printf("episode over after %d turns (%s), progression %.3f\n", slot->turn(),
                  outcome.terminated ? "terminated" : "truncated", slot->env().progression());
    } else {
      show_observation();
    }
  }
};

}  // namespace

int run_play(int argc, char** argv) {
  CLI::App app{"Play an environment by hand: shows exactly the text an LLM receives, reads free-text\n"
               "replies and runs them through the same action parser.\n" +
                   std::string(kHelp),
               "turnrl play"};
  std::string env_id;
  uint64_t seed = 0;
  std::string format_name = "action-tag";
  std::vector<std::string> option_pairs;
  app.add_option("--env", env_id, "environment id (see `turnrl envs`)")->required();
  app.add_option("--seed", seed, "episode seed")->capture_default_str();
  app.add_option("--reply-format", format_name, "action-tag (Verlog: text after ACTION:) or balrog (naive agent)")
      ->check(CLI::IsMember({"action-tag", "balrog"}))
      ->capture_default_str();
  app.add_option("--env-option", option_pairs, "environment option key=value (repeatable)");
  if (int code = parse_cli(app, argc, argv); code >= 0) return code;

  trainer::ActionConfig actions;
  actions.reply_format = format_name == "balrog" ? envs::ReplyFormat::kBalrogNaive : envs::ReplyFormat::kActionTag;
  actions.feedback_on_invalid_action = true;  // BALROG's note in the next observation
  actions.invalid_action_penalty = 0.0;       // show the env's own reward
  memory::HistoryConfig history;
  history.max_turns = 0;  // play shows the current observation; the instruction is printed at reset
  history.suffix.clear();
  Session session;
  session.slot = std::make_unique<trainer::EnvSlot>(envs::make_env(env_id, parse_env_options(option_pairs)), history,
                                                    actions, 0);
  const bool interactive = isatty(STDIN_FILENO) != 0;
  if (interactive) std::printf("%s", kHelp);
  session.reset(seed);

  std::string line;
  for (;;) {
    if (interactive) std::printf("> ");
    std::fflush(stdout);
    if (!std::getline(std::cin, line)) break;
    if (line == ":quit" || line == ":q") break;
    if (line == ":help") {
      std::printf("%s", kHelp);
    } else if (line == ":reset") {
      session.reset(session.seed);
    } else if (line.rfind(":seed", 0) == 0) {
      try {
        session.reset(std::stoull(line.substr(5)));
      } catch (const std::exception&) {
        std::printf("usage: :seed N (a non-negative integer)\n");
      }
    } else if (line == ":grid") {
      std::printf("%s\n", session.slot->env().render_ascii().c_str());
    } else if (line == ":actions") {
      for (const auto& action : session.slot->env().actions()) {
        std::printf("  %s: %s\n", action.name.c_str(), action.description.c_str());
      }
    } else if (!line.empty() && line[0] == ':') {
      std::printf("unknown command '%s'\n%s", line.c_str(), kHelp);
    } else {
      session.reply(line);
    }
  }
  return 0;
}

}  // namespace turnrl::tools
