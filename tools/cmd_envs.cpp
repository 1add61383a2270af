#include <cstdio>

#include "envs/registry.h"
#include "tools/cli.h"
#include "tools/command.h"

namespace turnrl::tools {

int run_envs(int argc, char** argv) {
  CLI::App app{"List the registered environment ids (with --details: each family's actions and options)", "turnrl envs"};
  bool details = false;
  app.add_flag("--details", details, "show each family's actions and options");
  if (int code = parse_cli(app, argc, argv); code >= 0) return code;
  if (!details) {
    for (const auto& id : envs::env_ids()) std::printf("%s\n", id.c_str());
    return 0;
  }
  for (const auto& family : envs::env_families()) {
    std::printf("%s (%zu ids)\n  ids:", family.name.c_str(), family.ids.size());
    for (const auto& id : family.ids) std::printf(" %s", id.c_str());
    std::printf("\n  actions:\n");
    for (const auto& action : family.actions) std::printf("    %-22s %s\n", action.name.c_str(), action.description.c_str());
    std::printf("  options:\n");
    for (const auto& option : family.options) {
      std::printf("    %-10s default %s: %s\n", option.name.c_str(), option.default_value.c_str(), option.description.c_str());
    }
  }
  return 0;
}

}  // namespace turnrl::tools
