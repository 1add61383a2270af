#pragma once
// The `turnrl` sub-commands. Each lives in its own file and parses its own options.
#include <string>
#include <vector>

namespace turnrl::tools {

struct Command {
  std::string name;
  std::string summary;
  int (*run)(int argc, char** argv);                // argv[0] is the sub-command name
  const std::vector<Command>* subcommands = nullptr;  // the commands `run` dispatches to (bench's benchmarks)
};

/** Every sub-command, in the order `turnrl --help` lists them. */
const std::vector<Command>& commands();
/** `turnrl bench <benchmark>`'s benchmarks. */
const std::vector<Command>& benchmarks();

int run_replay(int argc, char** argv);
int run_play(int argc, char** argv);
int run_bench(int argc, char** argv);
int run_envs(int argc, char** argv);
int run_tokenize(int argc, char** argv);
int run_new_model(int argc, char** argv);
int run_generate(int argc, char** argv);
int run_train(int argc, char** argv);
int run_eval(int argc, char** argv);
int run_env_server(int argc, char** argv);
int run_sft(int argc, char** argv);
int run_make_sft_data(int argc, char** argv);
int run_serve(int argc, char** argv);
int run_config(int argc, char** argv);

}  // namespace turnrl::tools
