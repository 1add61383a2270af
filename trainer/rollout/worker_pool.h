#pragma once
// The env servers a run spreads its rollout slots over (`env.workers`): one connection per worker,
// watched by a heartbeat thread. A worker that leaves a call without reply is given up on: its
// connection is closed, so its other envs fail at once instead of each waiting out a timeout.
// The heartbeat pings the live workers (an idle run keeps its slots, e.g. during a long update)
// and probes the given-up ones with a fresh connection; one that answers again takes new episodes.
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "envs/server/env_client.h"

namespace turnrl::trainer {

struct WorkerPoolOptions {
  std::vector<std::string> endpoints;
  /** Longest wait for any reply: a worker silent this long counts as dead. */
  std::chrono::milliseconds timeout{10000};
  /** How often live workers are pinged and dead ones probed. */
  std::chrono::milliseconds heartbeat{5000};
};

/** Why `endpoints` cannot name the workers (empty when they can): each tcp://HOST:PORT or
 *  ipc://PATH, none twice. */
std::string worker_endpoints_problem(const std::vector<std::string>& endpoints);

/** A worker as handed out: its index and the connection that reaches it now. */
struct WorkerConnection {
  int worker = -1;
  std::shared_ptr<envs::server::EnvClient> client;
};

/** Thread-safe. Envs hold the pool by shared_ptr, so it outlives them. */
class WorkerPool {
 public:
  /** Connects to every worker; those that do not answer start given up. Throws
   *  std::invalid_argument for a bad or repeated endpoint, std::runtime_error when none answers. */
  explicit WorkerPool(WorkerPoolOptions options);
  ~WorkerPool();  // stops the heartbeat (within one timeout)
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  int size() const { return static_cast<int>(options_.endpoints.size()); }
  const std::string& endpoint(int worker) const { return options_.endpoints.at(worker); }
  bool is_up(int worker) const;
  /** Envs living on `worker` now. */
  int envs_on(int worker) const;

  /** Where a new env should live: `preferred` when it is up and not `excluded`, else the live
   *  worker with the fewest envs outside `excluded`; nullopt when there is none. */
  std::optional<WorkerConnection> choose(int preferred, const std::vector<int>& excluded = {}) const;
  /** Each given-up worker's last failure, for error messages. */
  std::string failures() const;
  /** An env moved onto / off `worker` (the counts choose() balances). */
  void attach(int worker);
  void release(int worker);
  /** A call through `connection` got no reply: the worker is given up on, unless it was already
   *  (or has a newer connection since). */
  void report_failure(const WorkerConnection& connection, const std::string& reason);

 private:
  struct Worker {
    std::shared_ptr<envs::server::EnvClient> client;  // null while given up on
    std::string last_failure;
    int envs = 0;
  };
  /** A connection that answered hello, or null (with `failure` set). */
  std::shared_ptr<envs::server::EnvClient> connect(int worker, std::string& failure) const;
  void heartbeat_loop();
  /** Pings a live worker or probes a given-up one. */
  void check(int worker);

  const WorkerPoolOptions options_;
  mutable std::mutex mutex_;
  std::vector<Worker> workers_;
  std::condition_variable stop_signal_;
  bool stopping_ = false;
  std::thread heartbeat_;
};

}  // namespace turnrl::trainer
