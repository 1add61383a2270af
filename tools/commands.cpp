#include "tools/command.h"

namespace turnrl::tools {

const std::vector<Command>& commands() {
  static const std::vector<Command> all = {
#ifdef TURNRL_WITH_TORCH
      {"train", "train a policy with turn-level PPO from a YAML config", run_train},
      {"sft", "supervised fine-tuning on chat transcripts (the format stage before PPO)", run_sft},
      {"make-sft-data", "write format data (template replies in training's prompts) for sft", run_make_sft_data},
#endif
      {"play", "play an environment by hand (or step through a model), seeing exactly what the model sees", run_play},
      {"replay", "replay golden trajectories and compare every recorded field", run_replay},
      {"bench", "benchmarks (env stepping, ...)", run_bench, &benchmarks()},
      {"envs", "list the registered environment ids, their actions and options", run_envs},
      {"config", "the reference of every config key: type, default, doc (--reference)", run_config},
      {"env-server", "serve the environments over ZeroMQ to remote clients (C++, Python)", run_env_server},
      {"tokenize", "encode or decode JSON Lines with a Hugging Face tokenizer", run_tokenize},
#ifdef TURNRL_WITH_TORCH
      {"new-model", "write a randomly initialised model folder from a preset", run_new_model},
      {"eval", "evaluation: zero-shot sweeps (BALROG protocol) or a training run's model (--run)", run_eval},
      {"generate", "generate a reply with a model folder (a quick check)", run_generate},
      {"serve", "serve a model folder with an OpenAI-compatible chat API (continuous batching)", run_serve},
#endif
  };
  return all;
}

}  // namespace turnrl::tools
