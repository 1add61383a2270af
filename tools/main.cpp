// turnrl: train, evaluate, play and inspect LLM agents on multi-turn text games.
#include <spdlog/spdlog.h>

#include <cstdio>
#include <exception>
#include <string>

#include "tools/allocator.h"
#include "tools/cli.h"
#ifdef TURNRL_WITH_TORCH
#include <c10/util/Exception.h>
#endif
#include "tools/command.h"

namespace {

void print_usage() {
  std::printf("turnrl: reinforcement learning for LLM agents on multi-turn text games\n\n");
  std::printf("usage: turnrl <command> [options]   (turnrl <command> --help for its options)\n\ncommands:\n");
  for (const auto& command : turnrl::tools::commands()) {
    std::printf("  %-12s %s\n", command.name.c_str(), command.summary.c_str());
  }
}

/** `turnrl --commands`: every command line of the table, nested ones as "bench env", each with its
 *  summary after a tab; for scripts and test_cli, which check every command it lists. */
void print_command_table() {
  for (const auto& command : turnrl::tools::commands()) {
    std::printf("%s\t%s\n", command.name.c_str(), command.summary.c_str());
    if (!command.subcommands) continue;
    for (const auto& sub : *command.subcommands) std::printf("%s %s\t%s\n", command.name.c_str(), sub.name.c_str(), sub.summary.c_str());
  }
}

}  // namespace

int main(int argc, char** argv) {
  turnrl::tools::keep_freed_memory_in_heap();
  if (argc < 2) {
    print_usage();
    return turnrl::tools::kExitUsage;
  }
  const std::string name = argv[1];
  if (name == "--help" || name == "-h" || name == "help") {
    print_usage();
    return 0;
  }
  if (name == "--commands") {
    print_command_table();
    return 0;
  }
  for (const auto& command : turnrl::tools::commands()) {
    if (command.name != name) continue;
    try {
      return command.run(argc - 1, argv + 1);
#ifdef TURNRL_WITH_TORCH
    } catch (const c10::Error& e) {
      // libtorch's what() carries a C++ backtrace; one line is what a user needs.
      const std::string message = e.what_without_backtrace();
      std::fprintf(stderr, "turnrl %s: error: %s\n", name.c_str(), message.substr(0, message.find('\n')).c_str());
      return turnrl::tools::kExitFailure;
#endif
    } catch (const std::exception& e) {
      std::fprintf(stderr, "turnrl %s: error: %s\n", name.c_str(), e.what());
      return turnrl::tools::kExitFailure;
    }
  }
  std::fprintf(stderr, "turnrl: unknown command '%s'\n\n", name.c_str());
  print_usage();
  return turnrl::tools::kExitUsage;
}
