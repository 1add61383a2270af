#include "tools/command.h"

namespace turnrl::tools {

const std::vector<Command>& commands() {
  static const std::vector<Command> all = {
      {"train", "train a policy with turn-level PPO from a YAML config", run_train},
      {"play", "play an environment by hand, seeing exactly what an LLM sees", run_play},
      {"replay", "replay golden trajectories and compare every recorded field", run_replay},
      {"bench", "benchmarks (env stepping, ...)", run_bench},
      {"envs", "list the registered environment ids", run_envs},
      {"env-server", "serve the environments over ZeroMQ to remote clients (C++, Python)", run_env_server},
      {"tokenize", "encode or decode JSON Lines with a Hugging Face tokenizer", run_tokenize},
      {"new-model", "write a randomly initialised model folder from a preset", run_new_model},
      {"eval", "zero-shot evaluation sweep: models x tasks x episodes (BALROG protocol)", run_eval},
      {"generate", "generate a reply with a model folder (a quick check)", run_generate},
  };
  return all;
}

}  // namespace turnrl::tools
