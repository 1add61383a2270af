// `turnrl env-server`: serves the registered environments over ZeroMQ (docs/env_protocol.md).
#include <csignal>
#include <cstdio>

#include <spdlog/spdlog.h>

#include "envs/server/env_server.h"
#include "tools/cli.h"
#include "tools/command.h"

namespace turnrl::tools {
namespace {

std::atomic<bool> stop_requested{false};

extern "C" void request_stop(int) { stop_requested = true; }

/** The server has no authentication, so anything beyond this machine deserves a warning. */
bool is_local(const std::string& endpoint) {
  for (const char* prefix : {"tcp://127.0.0.1:", "tcp://localhost:", "tcp://[::1]:", "ipc://", "inproc://"}) {
    if (endpoint.starts_with(prefix)) return true;
  }
  return false;
}

}  // namespace

int run_env_server(int argc, char** argv) {
  CLI::App app{"Serve the registered environments over ZeroMQ (protocol: docs/env_protocol.md)", "turnrl env-server"};
  envs::server::EnvServerOptions options;
  double client_timeout_s = 60;
  app.add_option("--bind", options.bind, "ZeroMQ endpoint to bind; tcp://127.0.0.1:* picks a free port")
      ->capture_default_str();
  app.add_option("--slots", options.slots, "env slots shared by the clients (also the largest batch)")
      ->check(CLI::Range(1, 65536))
      ->capture_default_str();
  app.add_option("--client-timeout", client_timeout_s, "seconds of silence after which a client's slots are freed")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  if (int code = parse_cli(app, argc, argv); code >= 0) return code;
  options.client_timeout = std::chrono::milliseconds(static_cast<long>(client_timeout_s * 1000));
  if (!is_local(options.bind)) {
    spdlog::warn("env server: {} is reachable from other machines and has no authentication", options.bind);
  }

  envs::server::EnvServer server(options);
  struct sigaction action {};
  action.sa_handler = request_stop;
  sigaction(SIGINT, &action, nullptr);
  sigaction(SIGTERM, &action, nullptr);
  // Scripts and tests read the bound endpoint (a wildcard port resolved) from this line.
  std::printf("listening on %s\n", server.endpoint().c_str());
  std::fflush(stdout);
  server.run(stop_requested);
  return 0;
}

}  // namespace turnrl::tools
