#include <cstdio>

#include "envs/registry.h"
#include "tools/cli.h"
#include "tools/command.h"

namespace turnrl::tools {

int run_envs(int argc, char** argv) {
  CLI::App app{"List the registered environment ids", "turnrl envs"};
  if (int code = parse_cli(app, argc, argv); code >= 0) return code;
  for (const auto& id : envs::env_ids()) std::printf("%s\n", id.c_str());
  return 0;
}

}  // namespace turnrl::tools
