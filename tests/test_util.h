#pragma once
// Helpers shared by the tests: paths to shared data and running the turnrl binary.
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <sys/wait.h>

namespace turnrl::test {

inline std::string shared_path(const std::string& relative) { return std::string(TURNRL_SHARED_DIR) + "/" + relative; }

struct CommandResult {
  int exit_code = -1;
  std::string output;  // stdout and stderr together
};

/** Runs `turnrl <arguments>` through the shell, with optional text on standard input. */
inline CommandResult run_turnrl(const std::string& arguments, const std::string& input = "") {
  std::string command = std::string("'") + TURNRL_BINARY + "' " + arguments + " 2>&1";
  std::string input_file;
  if (!input.empty()) {
    std::string name = (std::filesystem::temp_directory_path() / "turnrl_test_input_XXXXXX").string();
    const int fd = mkstemp(name.data());
    FILE* f = fdopen(fd, "w");
    std::fwrite(input.data(), 1, input.size(), f);
    std::fclose(f);
    input_file = name;
    command += " < " + input_file;
  } else {
    command += " < /dev/null";
  }
  CommandResult result;
  FILE* pipe = popen(command.c_str(), "r");
  char buffer[4096];
  while (size_t n = std::fread(buffer, 1, sizeof buffer, pipe)) result.output.append(buffer, n);
  const int status = pclose(pipe);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  if (!input_file.empty()) std::remove(input_file.c_str());
  return result;
}

}  // namespace turnrl::test
