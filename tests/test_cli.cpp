// The turnrl command as a user meets it: help, bad options, bad files.
#include <doctest/doctest.h>

#include <fstream>

#include "test_util.h"

using turnrl::test::run_turnrl;

TEST_CASE("help and unknown commands") {
  auto help = run_turnrl("--help");
  CHECK(help.exit_code == 0);
  CHECK(help.output.find("replay") != std::string::npos);
  CHECK(run_turnrl("frobnicate").exit_code == 2);
  CHECK(run_turnrl("").exit_code == 2);
  for (const char* command : {"replay", "play", "bench env", "bench env-server", "envs", "env-server", "tokenize",
#ifdef TURNRL_WITH_TORCH
                              "train", "eval", "generate", "new-model", "bench llm", "bench rollout",
#endif
                              "bench crafter"}) {
    auto result = run_turnrl(std::string(command) + " --help");
    CHECK_MESSAGE(result.exit_code == 0, command);
    CHECK_MESSAGE(result.output.find("--") != std::string::npos, command);
  }
}

TEST_CASE("unknown options and env ids fail cleanly") {
  CHECK(run_turnrl("replay --no-such-option x").exit_code == 2);
  auto unknown = run_turnrl("play --env no/such/env");
  CHECK(unknown.exit_code == 1);
  CHECK(unknown.output.find("unknown env id") != std::string::npos);
  CHECK(run_turnrl("bench env --env no/such/env --steps 10").exit_code == 1);
}

TEST_CASE("malformed golden files fail with a message") {
  const std::string path = "/tmp/turnrl_cli_bad.jsonl.gz";
  {
    std::ofstream out(path);
    out << "this is not gzip nor json\n";
  }
  auto result = run_turnrl("replay --golden " + path);
  CHECK(result.exit_code == 1);
  CHECK(result.output.find("error") != std::string::npos);
  CHECK(run_turnrl("replay --golden /no/such/file.jsonl.gz").exit_code == 2);
}

#ifdef TURNRL_WITH_TORCH
TEST_CASE("libtorch errors reach stderr as one line, without a backtrace") {
  const std::string command = std::string("'") + TURNRL_BINARY + "' generate --model " + turnrl::test::shared_path("models/tiny-qwen2-tied") +
                              " --prompt hi --device nonsense > /tmp/turnrl_cli_out.txt 2> /tmp/turnrl_cli_err.txt";
  CHECK(WEXITSTATUS(std::system(command.c_str())) == 1);
  std::ifstream err("/tmp/turnrl_cli_err.txt"), out("/tmp/turnrl_cli_out.txt");
  const std::string err_text((std::istreambuf_iterator<char>(err)), {}), out_text((std::istreambuf_iterator<char>(out)), {});
  CHECK(err_text.rfind("turnrl generate: error: ", 0) == 0);
  CHECK(err_text.find("device") != std::string::npos);
  CHECK(err_text.find('\n') == err_text.size() - 1);
  CHECK(out_text.empty());
}
#endif
