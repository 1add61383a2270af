// Env steps/s through an env server (in a thread of this process, on a loopback port, or a running
// one named by --server) against the same envs stepped in-process, for several batch sizes. Both sides do the same env work per step:
// random actions, the text observation and progression built, next seed on episode end.
#include <atomic>
#include <chrono>
#include <cstdio>
#include <memory>
#include <random>
#include <thread>

#include <nlohmann/json.hpp>

#include "envs/registry.h"
#include "envs/server/env_client.h"
#include "envs/server/env_server.h"
#include "tools/bench.h"
#include "tools/cli.h"
#include "tools/env_options.h"

namespace turnrl::tools {
namespace {

using Clock = std::chrono::steady_clock;

/** Random actions and fresh seeds, identical for both sides. */
struct Driver {
  std::mt19937 rng{0};
  uint64_t next_seed = 0;
  int pick(int num_actions) { return std::uniform_int_distribution<int>(0, num_actions - 1)(rng); }
};

double in_process_steps_per_sec(const std::string& env_id, const nlohmann::json& options, int batch, long steps) {
  std::vector<std::unique_ptr<envs::Env>> envs;
  Driver driver;
  for (int i = 0; i < batch; ++i) {
    envs.push_back(envs::make_env(env_id, options));
    envs.back()->reset(driver.next_seed++);
  }
  long done = 0;
  const Clock::time_point start = Clock::now();
  while (done < steps) {
    for (auto& env : envs) {
      const envs::StepResult result = env->step(driver.pick(env->num_actions()));
      // What a server reply carries (virtual calls: not optimised away).
      env->observe_text();
      env->progression();
      if (result.terminated || result.truncated) {
        env->reset(driver.next_seed++);
        env->observe_text();
        env->instruction_prompt();
      }
    }
    done += batch;
  }
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  return static_cast<double>(done) / seconds;
}

double server_steps_per_sec(envs::server::EnvClient& client, const std::string& env_id, const nlohmann::json& options,
                            int batch, long steps) {
  std::vector<envs::server::CreateItem> creates(batch, {std::nullopt, env_id, options});
  std::vector<int> slots;
  std::vector<int> num_actions;
  for (const auto& info : client.create(creates)) {
    slots.push_back(info.slot);
    num_actions.push_back(static_cast<int>(info.actions.size()));
  }
  Driver driver;
  std::vector<envs::server::ResetItem> resets;
  for (int slot : slots) resets.push_back({slot, driver.next_seed++});
  client.reset(resets);
  std::vector<envs::server::StepItem> actions(batch);
  long done = 0;
  const Clock::time_point start = Clock::now();
  while (done < steps) {
    for (int i = 0; i < batch; ++i) actions[i] = {slots[i], driver.pick(num_actions[i])};
    resets.clear();
    for (const auto& outcome : client.step(actions)) {
      if (outcome.result.terminated || outcome.result.truncated) resets.push_back({outcome.slot, driver.next_seed++});
    }
    if (!resets.empty()) client.reset(resets);
    done += batch;
  }
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  client.close(slots);
  return static_cast<double>(done) / seconds;
}

}  // namespace

int bench_env_server(int argc, char** argv) {
  CLI::App app{"Env steps/s through an env server (loopback, in a thread) vs in-process, per batch size",
               "turnrl bench env-server"};
  std::string env_id = "babyai/goto";
  long steps = 50000;
  std::vector<int> batches = {1, 16, 256};
  std::vector<std::string> option_pairs;
  app.add_option("--env", env_id, "environment id")->capture_default_str();
  app.add_option("--steps", steps, "env steps per measurement (rounded up to whole batches)")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--batch", batches, "batch sizes (slots stepped per message)")
      ->check(CLI::Range(1, 65536))
      ->capture_default_str();
  app.add_option("--env-option", option_pairs, "environment option key=value (repeatable)");
  std::string server_endpoint;
  app.add_option("--server", server_endpoint,
                 "measure through this running server (e.g. the one a Python client measures through; its "
                 "--slots must cover the largest batch) instead of one in a thread");
  if (int code = parse_cli(app, argc, argv); code >= 0) return code;
  const nlohmann::json options = parse_env_options(option_pairs);

  int max_batch = 1;
  for (int batch : batches) max_batch = std::max(max_batch, batch);
  // The server thread, unless --server names a running server.
  std::unique_ptr<envs::server::EnvServer> server;
  std::atomic<bool> stop{false};
  std::thread serving;
  if (server_endpoint.empty()) {
    server = std::make_unique<envs::server::EnvServer>(
        envs::server::EnvServerOptions{"tcp://127.0.0.1:*", max_batch, std::chrono::minutes(10)});
    server_endpoint = server->endpoint();
    serving = std::thread([&] { server->run(stop); });
  }
  struct StopServer {
    std::atomic<bool>& stop;
    std::thread& thread;
    ~StopServer() {
      stop = true;
      if (thread.joinable()) thread.join();
    }
  } stop_server{stop, serving};

  envs::server::EnvClient client(server_endpoint);
  std::printf("%s through %s (%s), %ld steps per measurement\n", env_id.c_str(), server_endpoint.c_str(),
              server ? "server thread in this process" : "a running server", steps);
  std::printf("%8s %16s %16s %8s\n", "batch", "in-process/s", "server/s", "ratio");
  nlohmann::json rows = nlohmann::json::array();
  for (int batch : batches) {
    const double local = in_process_steps_per_sec(env_id, options, batch, steps);
    const double remote = server_steps_per_sec(client, env_id, options, batch, steps);
    std::printf("%8d %16.0f %16.0f %8.2f\n", batch, local, remote, remote / local);
    rows.push_back({{"batch", batch}, {"in_process_steps_per_sec", local}, {"server_steps_per_sec", remote},
                    {"ratio", remote / local}});
  }
  std::printf("%s\n", nlohmann::json{{"env", env_id}, {"steps", steps}, {"server", server_endpoint}, {"results", rows}}
                          .dump()
                          .c_str());
  return 0;
}

}  // namespace turnrl::tools
