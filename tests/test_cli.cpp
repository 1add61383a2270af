// The turnrl command as a user meets it: every command of the command table (tools/commands.cpp, as
// `turnrl --commands` lists it) with its help and a bad option, bad files, errors on one line.
#include <doctest/doctest.h>

#include <fstream>
#include <sstream>
#include <utility>
#include <vector>

#include "temp_dir.h"
#include "test_util.h"

using turnrl::test::run_turnrl;

namespace {

/** The command table: each command line ("replay", "bench env") and its summary. */
std::vector<std::pair<std::string, std::string>> command_table() {
  const auto listed = run_turnrl("--commands");
  REQUIRE(listed.exit_code == 0);
  std::vector<std::pair<std::string, std::string>> table;
  std::istringstream lines(listed.output);
  for (std::string line; std::getline(lines, line);) {
    const size_t tab = line.find('\t');
    REQUIRE_MESSAGE(tab != std::string::npos, line);
    table.emplace_back(line.substr(0, tab), line.substr(tab + 1));
  }
  return table;
}

}  // namespace

TEST_CASE("turnrl --help lists every top-level command with its summary; unknown commands are usage errors") {
  const auto help = run_turnrl("--help");
  CHECK(help.exit_code == 0);
  for (const auto& entry : command_table()) {
    const std::string& command = entry.first;  // not a structured binding: clang 14 cannot capture one
    const std::string& summary = entry.second;
    if (command.find(' ') != std::string::npos) continue;  // nested: its parent's help lists it
    CHECK_MESSAGE(help.output.find("  " + command + " ") != std::string::npos, command);
    CHECK_MESSAGE(help.output.find(summary) != std::string::npos, command);
  }
  CHECK(run_turnrl("frobnicate").exit_code == 2);
  CHECK(run_turnrl("").exit_code == 2);
}

TEST_CASE("every command of the table answers --help with its own usage, and refuses an unknown option with a message") {
  const auto table = command_table();
  REQUIRE_FALSE(table.empty());
  for (const auto& entry : table) {
    const std::string& command = entry.first;
    CAPTURE(command);
    const auto help = run_turnrl(command + " --help");
    CHECK(help.exit_code == 0);
    CHECK(help.output.find("turnrl " + command) != std::string::npos);
    const auto bad = run_turnrl(command + " --no-such-option");
    CHECK(bad.exit_code == 2);
    CHECK_FALSE(bad.output.empty());
  }
  // A parent's help lists its nested commands with their summaries.
  for (const auto& entry : table) {
    const std::string& command = entry.first;
    const std::string& summary = entry.second;
    const size_t space = command.find(' ');
    if (space == std::string::npos) continue;
    CAPTURE(command);
    const auto parent = run_turnrl(command.substr(0, space) + " --help");
    CHECK(parent.output.find(command.substr(space + 1)) != std::string::npos);
    CHECK(parent.output.find(summary) != std::string::npos);
  }
}

TEST_CASE("unknown env ids fail cleanly") {
  auto unknown = run_turnrl("play --env no/such/env");
  CHECK(unknown.exit_code == 1);
  CHECK(unknown.output.find("unknown env id") != std::string::npos);
  CHECK(run_turnrl("bench env --env no/such/env --steps 10").exit_code == 1);
}

TEST_CASE("malformed golden files fail with a message") {
  const turnrl::test::TempDir dir("turnrl_cli");
  const std::string path = dir / "bad.jsonl.gz";
  std::ofstream(path) << "this is not gzip nor json\n";
  auto result = run_turnrl("replay --golden " + path);
  CHECK(result.exit_code == 1);
  CHECK(result.output.find("error") != std::string::npos);
  CHECK(run_turnrl("replay --golden /no/such/file.jsonl.gz").exit_code == 2);
}

#ifdef TURNRL_WITH_TORCH
TEST_CASE("libtorch errors reach stderr as one line, without a backtrace") {
  const turnrl::test::TempDir dir("turnrl_cli");
  const std::string command = std::string("'") + TURNRL_BINARY + "' generate --model " + turnrl::test::shared_path("models/tiny-qwen2-tied") +
                              " --prompt hi --device nonsense > " + (dir / "out.txt") + " 2> " + (dir / "err.txt");
  CHECK(WEXITSTATUS(std::system(command.c_str())) == 1);
  std::ifstream err(dir / "err.txt"), out(dir / "out.txt");
  const std::string err_text((std::istreambuf_iterator<char>(err)), {}), out_text((std::istreambuf_iterator<char>(out)), {});
  CHECK(err_text.rfind("turnrl generate: error: ", 0) == 0);
  CHECK(err_text.find("device") != std::string::npos);
  CHECK(err_text.find('\n') == err_text.size() - 1);
  CHECK(out_text.empty());
}
#endif
