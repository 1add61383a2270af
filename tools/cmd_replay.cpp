#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include "envs/golden.h"
#include "tools/cli.h"
#include "tools/command.h"

namespace turnrl::tools {

int run_replay(int argc, char** argv) {
  CLI::App app{"Replay golden trajectories from their seeds and actions and compare every recorded field",
               "turnrl replay"};
  std::vector<std::string> files;
  app.add_option("--golden,files", files, "golden .jsonl.gz files")->required()->check(CLI::ExistingFile);
  if (int code = parse_cli(app, argc, argv); code >= 0) return code;

  int total = 0, exact = 0;
  bool all_ok = true;
  for (const auto& file : files) {
    envs::ReplayReport report;
    try {
      report = envs::replay_golden_file(file);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "error: %s\n", e.what());
      return kExitFailure;
    }
    total += report.episodes;
    exact += report.exact_episodes;
    std::printf("%s: %d/%d episodes exact\n", file.c_str(), report.exact_episodes, report.episodes);
    if (report.first_mismatch) {
      const auto& m = *report.first_mismatch;
      std::printf("  first mismatch: file %s, episode %d, step %ld (line %ld), field %s\n    expected: %s\n    got:      %s\n",
                  file.c_str(), m.episode, m.step, m.line, m.field.path.c_str(), m.field.expected.c_str(),
                  m.field.got.c_str());
      all_ok = false;
    }
  }
  if (files.size() > 1) std::printf("total: %d/%d episodes exact\n", exact, total);
  return all_ok ? 0 : kExitFailure;
}

}  // namespace turnrl::tools
