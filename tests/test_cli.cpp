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
  for (const char* command : {"replay", "play", "bench env", "envs"}) {
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
