// Interactive play: shows, before each reply, the exact text the model receives (chat template and
// history included, with its token count), then runs the reply through the same turn pipeline as
// training and evaluation (trainer::EnvSlot with the run's TurnSettings).
#include <cstdio>
#include <iostream>
#include <memory>
#include <optional>
#include <string>

#include <unistd.h>

#include "agents/model/tokenizer.h"
#include "envs/registry.h"
#include "tools/cli.h"
#include "tools/command.h"
#include "tools/env_options.h"
#include "trainer/config/config_reader.h"
#include "trainer/rollout/env_slot.h"
#include "trainer/rollout/episode_runner.h"
#include "trainer/run/run_folder.h"
#include "trainer/config/train_config.h"
#ifdef TURNRL_WITH_TORCH
#include "agents/model/language_model.h"
#include "trainer/rollout/policy_agent.h"
#endif

namespace turnrl::tools {
namespace {

constexpr const char* kHelp =
    "Type a reply as the model would (e.g. 'go forward' or 'I will turn. ACTION: turn left').\n"
    "With --agent llm, an empty line lets the model reply.\n"
    "Commands: :reset  :seed N  :grid  :actions  :help  :quit\n";

/** What play takes from a config file: the env and the turn settings. */
struct PlaySetup {
  std::string env_id;
  nlohmann::json env_options = nlohmann::json::object();
  trainer::TurnSettings turn;
  std::optional<trainer::TrainConfig> train;  // when the file is a training config (for --agent llm)
};

/** A training config (a run's config.yaml or a file in configs/), or a file with only `turn:` and
 *  optionally `env: {id, options}`. */
PlaySetup read_setup(const std::string& path) {
  PlaySetup setup;
  const YAML::Node root = trainer::load_yaml_file(path);
  if (root["model"] || root["ppo"] || root["run"]) {
    setup.train = trainer::TrainConfig::load(path);
    setup.env_id = setup.train->env.ids.front();
    setup.env_options = setup.train->env.options;
    setup.turn = setup.train->turn;
    return setup;
  }
  trainer::ConfigSection top(path, root, "");
  trainer::ConfigSection env = top.section("env");
  env.read("id", setup.env_id);
  env.read_json("options", setup.env_options);
  env.finish();
  setup.turn = trainer::read_turn_settings(top.section("turn"));
  top.finish();
  return setup;
}

/** One episode at a time through the rollouts' own turn logic. */
class Session {
 public:
  Session(std::unique_ptr<envs::Env> env, const trainer::TurnSettings& turn, const agents::Tokenizer* tokenizer,
          size_t agent_prompt_limit)
      : turn_(turn), tokenizer_(tokenizer), agent_prompt_limit_(agent_prompt_limit) {
    make_slot(std::move(env), 0);
  }

  void reset(uint64_t seed) {
    seed_ = seed;
    // The same per-episode choice stream as evaluation episodes of this seed.
    make_slot(envs::make_env(slot_->env().id(), options_), seed);
    slot_->begin_episode(seed);
    std::printf("=== %s, seed %llu, up to %d turns ===\n", slot_->env().id().c_str(), static_cast<unsigned long long>(seed),
                slot_->turn_limit());
    show_prompt();
  }
  void set_options(nlohmann::json options) { options_ = std::move(options); }

  /** The model's input for the current turn: the chat text and its tokens, or the messages. */
  std::vector<memory::ChatMessage> messages() const { return slot_->prompt(counter()); }
  void show_prompt() const {
    const std::vector<memory::ChatMessage> current = messages();
    if (tokenizer_) {
      const std::string text = tokenizer_->chat_text(current, true);
      std::printf("--- prompt (%zu tokens) ---\n%s--- end of prompt ---\n", tokenizer_->encode(text).size(), text.c_str());
    } else {
      std::printf("--- prompt (%zu messages; no tokenizer: pass --tokenizer DIR to see the chat template) ---\n", current.size());
      for (const auto& message : current) std::printf("[%s]\n%s\n", message.role.c_str(), message.content.c_str());
      std::printf("--- end of prompt ---\n");
    }
  }

  void reply(const std::string& text) {
    if (slot_->done()) {
      std::printf("The episode is over: use :reset or :seed N.\n");
      return;
    }
    const trainer::TurnOutcome outcome = slot_->apply(text);
    const std::string& name = slot_->env().actions()[outcome.action].name;
    if (outcome.valid) {
      std::printf("action: %s\n", name.c_str());
    } else {
      std::printf("action: %s (the default: '%s' names no action of this env)\n", name.c_str(), outcome.candidate.c_str());
    }
    std::printf("reward: %g (env %g) | return %g | step %d of %d\n", outcome.reward, outcome.env_reward, slot_->episode_return(),
                slot_->turn(), slot_->turn_limit());
    if (outcome.done()) {
      std::printf("episode over after %d turns (%s), progression %.3f\n", slot_->turn(),
                  outcome.terminated ? "terminated" : "truncated", slot_->env().progression());
    } else {
      show_prompt();
    }
  }

  const envs::Env& env() const { return slot_->env(); }
  bool done() const { return slot_->done(); }
  uint64_t seed() const { return seed_; }
  int turn() const { return slot_->turn(); }

 private:
  void make_slot(std::unique_ptr<envs::Env> env, uint64_t seed) {
    slot_ = std::make_unique<trainer::EnvSlot>(std::move(env), turn_, trainer::episode_choice_seed(seed), agent_prompt_limit_);
  }
  memory::TokenCounter counter() const {
    if (!tokenizer_) return nullptr;
    return [this](const std::vector<memory::ChatMessage>& m) { return tokenizer_->encode_chat(m, true).size(); };
  }

  trainer::TurnSettings turn_;
  const agents::Tokenizer* tokenizer_;
  size_t agent_prompt_limit_;
  nlohmann::json options_ = nlohmann::json::object();
  std::unique_ptr<trainer::EnvSlot> slot_;
  uint64_t seed_ = 0;
};

}  // namespace

int run_play(int argc, char** argv) {
  CLI::App app{"Play an environment by hand, or step through a model's replies: before each reply, shows the\n"
               "exact text the model receives (chat template and history, with its token count), then the\n"
               "parsed action, the reward, the return and the step. Turn settings come from --run, --config\n"
               "or the defaults (BALROG's protocol).\n" +
                   std::string(kHelp),
               "turnrl play"};
  std::string env_id, run_dir, config_path, tokenizer_dir, agent_kind = "person", model_dir;
  uint64_t seed = 0;
  std::vector<std::string> option_pairs;
  app.add_option("--env", env_id, "environment id (see `turnrl envs`); default: the config's first task");
  app.add_option("--seed", seed, "episode seed")->capture_default_str();
  app.add_option("--run", run_dir, "a training run: its turn settings, env and latest model")->check(CLI::ExistingDirectory);
  app.add_option("--config", config_path, "a training config, or a file with a turn: section (and env: {id, options})")
      ->check(CLI::ExistingFile);
  app.add_option("--tokenizer", tokenizer_dir, "model folder whose tokenizer renders the chat template")->check(CLI::ExistingDirectory);
  app.add_option("--agent", agent_kind, "person (type the replies) or llm (Enter lets the model reply)")
      ->check(CLI::IsMember({"person", "llm"}))
      ->capture_default_str();
  app.add_option("--model", model_dir, "model folder for --agent llm (default: the run's latest model)")->check(CLI::ExistingDirectory);
  app.add_option("--env-option", option_pairs, "environment option key=value (repeatable)");
  if (int code = parse_cli(app, argc, argv); code >= 0) return code;
  if (!run_dir.empty() && !config_path.empty()) throw std::invalid_argument("play: give --run or --config, not both");

  PlaySetup setup;
  if (!run_dir.empty()) setup = read_setup(trainer::run_config_path(run_dir));
  if (!config_path.empty()) setup = read_setup(config_path);
  if (!env_id.empty()) setup.env_id = env_id;
  if (setup.env_id.empty()) throw std::invalid_argument("play: --env is required without a config naming one");
  if (!option_pairs.empty()) setup.env_options = parse_env_options(option_pairs);
  if (agent_kind == "llm" && model_dir.empty() && !run_dir.empty()) model_dir = trainer::latest_model(run_dir);
  if (tokenizer_dir.empty()) tokenizer_dir = !model_dir.empty() ? model_dir : !run_dir.empty() ? trainer::latest_model(run_dir) : "";
  std::optional<agents::Tokenizer> tokenizer;
  if (!tokenizer_dir.empty()) tokenizer = agents::Tokenizer::load(tokenizer_dir);

  std::unique_ptr<agents::Agent> agent;
  if (agent_kind == "llm") {
#ifdef TURNRL_WITH_TORCH
    if (model_dir.empty()) throw std::invalid_argument("play --agent llm needs --model DIR or --run RUN");
    trainer::TrainConfig sampling;
    if (setup.train) sampling = *setup.train;
    sampling.env.ids = {setup.env_id};
    if (!setup.train) sampling.sampling.action_tokens_only = false;
    agent = trainer::make_policy_agent(agents::LanguageModel::load(model_dir, sampling.model.device), sampling, true);
#else
    throw std::invalid_argument("play --agent llm needs a build with libtorch (-DTURNRL_WITH_TORCH=ON)");
#endif
  }
  Session session(envs::make_env(setup.env_id, setup.env_options), setup.turn, tokenizer ? &*tokenizer : nullptr,
                  agent ? agent->max_prompt_tokens() : 0);
  session.set_options(setup.env_options);
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
      session.reset(session.seed());
    } else if (line.rfind(":seed", 0) == 0) {
      try {
        session.reset(std::stoull(line.substr(5)));
      } catch (const std::exception&) {
        std::printf("usage: :seed N (a non-negative integer)\n");
      }
    } else if (line == ":grid") {
      std::printf("%s\n", session.env().render_ascii().c_str());
    } else if (line == ":actions") {
      for (const auto& action : session.env().actions()) {
        std::printf("  %s: %s\n", action.name.c_str(), action.description.c_str());
      }
    } else if (!line.empty() && line[0] == ':') {
      std::printf("unknown command '%s'\n%s", line.c_str(), kHelp);
    } else if (line.empty() && agent && !session.done()) {
      agents::AgentPrompt prompt;
      prompt.messages = session.messages();
      prompt.actions = &session.env().actions();
      prompt.seed = trainer::episode_turn_seed(session.seed(), session.turn());
      const std::string reply = agent->act({prompt}).front().text;
      std::printf("model: %s\n", reply.c_str());
      session.reply(reply);
    } else {
      session.reply(line);
    }
  }
  return 0;
}

}  // namespace turnrl::tools
