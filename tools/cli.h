#pragma once
// Shared command-line plumbing: CLI11 parsing with turnrl's exit codes.
#include <CLI/CLI.hpp>

namespace turnrl::tools {

constexpr int kExitUsage = 2;    // bad options or arguments
constexpr int kExitFailure = 1;  // the command ran and found a problem

/** Parses argv into `app`; returns an exit code to return immediately, or -1 to continue. */
int parse_cli(CLI::App& app, int argc, char** argv);

}  // namespace turnrl::tools
