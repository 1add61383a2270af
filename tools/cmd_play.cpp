// Interactive play: shows the exact text an LLM receives and runs replies through the same parser.
#include <cstdio>
#include <iostream>
#include <memory>
#include <random>
#include <string>

#include <unistd.h>

#include "envs/action_parser.h"
#include "envs/registry.h"
#include "tools/cli.h"
#include "tools/command.h"
#include "tools/env_options.h"

namespace turnrl::tools {
namespace {

constexpr const char* kHelp =
    "Type a reply as the model would (e.g. 'go forward' or 'I will turn. ACTION: turn left').\n"
    "Commands: :reset  :seed N  :grid  :actions  :help  :quit\n";

struct Session {
  std::unique_ptr<envs::Env> env;
  envs::ReplyFormat format;
  uint64_t seed = 0;
  bool episode_over = false;
  int turn = 0;
  std::string feedback;
  std::mt19937_64 translation_rng{0};

  void reset(uint64_t new_seed) {
    seed = new_seed;
    env->reset(seed);
    episode_over = false;
    turn = 0;
    feedback.clear();
    std::printf("=== %s, seed %llu, up to %d turns ===\n", env->id().c_str(),
                static_cast<unsigned long long>(seed), env->max_steps());
    std::printf("--- instruction (first user message) ---\n%s\n", env->instruction_prompt().c_str());
    show_observation();
  }

  void show_observation() const {
    const envs::TextObservation text = env->observe_text();
    std::string shown = "Current Observation:\n";
    if (!text.short_term.empty()) shown += text.short_term + "\n";
    shown += feedback + text.long_term;
    std::printf("--- observation (turn %d) ---\n%s\n", turn, shown.c_str());
  }

  void reply(const std::string& text) {
    if (episode_over) {
      std::printf("The episode is over: use :reset or :seed N.\n");
      return;
    }
    const envs::ParsedAction parsed = envs::parse_action(text, *env, format, translation_rng);
    const std::string& name = env->actions()[parsed.action].name;
    if (parsed.valid) {
      std::printf("action: %s\n", name.c_str());
    } else {
      std::printf("action: %s (default; '%s' is not a valid action)\n", name.c_str(), parsed.candidate.c_str());
    }
    const envs::StepResult result = env->step(parsed.action);
    ++turn;
    feedback = parsed.valid ? "" : envs::invalid_action_feedback(name);
    std::printf("reward: %g\n", result.reward);
    if (result.terminated || result.truncated || turn >= env->max_steps()) {
      episode_over = true;
      std::printf("episode over after %d turns (%s), progression %.3f\n", turn,
                  result.terminated ? "terminated" : "truncated", env->progression());
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

  Session session;
  session.env = envs::make_env(env_id, parse_env_options(option_pairs));
  session.format = format_name == "balrog" ? envs::ReplyFormat::kBalrogNaive : envs::ReplyFormat::kActionTag;
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
      std::printf("%s\n", session.env->render_ascii().c_str());
    } else if (line == ":actions") {
      for (const auto& action : session.env->actions()) {
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
