#include "trainer/rollout/worker_pool.h"

#include <algorithm>
#include <cctype>
#include <stdexcept>

#include <spdlog/spdlog.h>

namespace turnrl::trainer {

using envs::server::EnvClient;
using envs::server::ServerError;

namespace {

std::string endpoint_problem(const std::string& endpoint) {
  if (endpoint.starts_with("ipc://")) return endpoint.size() > 6 ? "" : "names no socket path";
  if (!endpoint.starts_with("tcp://")) return "must be tcp://HOST:PORT or ipc://PATH";
  const std::string address = endpoint.substr(6);
  const size_t colon = address.rfind(':');
  if (colon == 0) return "names no host (tcp://HOST:PORT)";
  const std::string port = colon == std::string::npos ? "" : address.substr(colon + 1);
  const auto is_digit = [](unsigned char c) { return std::isdigit(c) != 0; };
  const bool digits = !port.empty() && port.size() <= 5 && std::all_of(port.begin(), port.end(), is_digit);
  if (!digits || std::stoi(port) < 1 || std::stoi(port) > 65535) return "needs a port in [1, 65535] (tcp://HOST:PORT)";
  return "";
}

}  // namespace

std::string worker_endpoints_problem(const std::vector<std::string>& endpoints) {
  for (auto it = endpoints.begin(); it != endpoints.end(); ++it) {
    if (const std::string problem = endpoint_problem(*it); !problem.empty()) return "'" + *it + "' " + problem;
    if (std::find(endpoints.begin(), it, *it) != it) return "'" + *it + "' is listed twice";
  }
  return "";
}

WorkerPool::WorkerPool(WorkerPoolOptions options) : options_(std::move(options)), workers_(options_.endpoints.size()) {
  if (options_.endpoints.empty()) throw std::invalid_argument("env workers: none listed");
  if (const std::string problem = worker_endpoints_problem(options_.endpoints); !problem.empty()) {
    throw std::invalid_argument("env workers: " + problem);
  }
  int up = 0;
  for (int w = 0; w < size(); ++w) {
    workers_[w].client = connect(w, workers_[w].last_failure);
    if (workers_[w].client) {
      ++up;
    } else {
      spdlog::warn("env worker {} does not answer ({}); it is probed every {} ms", endpoint(w), workers_[w].last_failure,
                   options_.heartbeat.count());
    }
  }
  if (up == 0) throw std::runtime_error("no env worker answers: " + failures());
  heartbeat_ = std::thread([this] { heartbeat_loop(); });
}

WorkerPool::~WorkerPool() {
  {
    const std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  stop_signal_.notify_all();
  heartbeat_.join();
}

std::string WorkerPool::failures() const {
  const std::lock_guard lock(mutex_);
  std::string out;
  for (int w = 0; w < size(); ++w) {
    if (!workers_[w].client) out += (out.empty() ? "" : "; ") + endpoint(w) + ": " + workers_[w].last_failure;
  }
  return out;
}

bool WorkerPool::is_up(int worker) const {
  const std::lock_guard lock(mutex_);
  return workers_.at(worker).client != nullptr;
}

int WorkerPool::envs_on(int worker) const {
  const std::lock_guard lock(mutex_);
  return workers_.at(worker).envs;
}

std::optional<WorkerConnection> WorkerPool::choose(int preferred, const std::vector<int>& excluded) const {
  const std::lock_guard lock(mutex_);
  const auto usable = [&](int w) {
    return workers_.at(w).client && std::find(excluded.begin(), excluded.end(), w) == excluded.end();
  };
  int best = usable(preferred) ? preferred : -1;
  for (int w = 0; w < size() && best != preferred; ++w) {
    if (usable(w) && (best < 0 || workers_[w].envs < workers_[best].envs)) best = w;
  }
  if (best < 0) return std::nullopt;
  return WorkerConnection{best, workers_[best].client};
}

void WorkerPool::attach(int worker) {
  const std::lock_guard lock(mutex_);
  ++workers_.at(worker).envs;
}

void WorkerPool::release(int worker) {
  const std::lock_guard lock(mutex_);
  --workers_.at(worker).envs;
}

void WorkerPool::report_failure(const WorkerConnection& connection, const std::string& reason) {
  {
    const std::lock_guard lock(mutex_);
    Worker& worker = workers_.at(connection.worker);
    if (!connection.client || worker.client != connection.client) return;  // given up on already
    worker.client.reset();
    worker.last_failure = reason;
  }
  connection.client->disconnect(reason);  // outside the pool's lock: it waits for a call in flight
  spdlog::warn("env worker {} failed ({}): given up on, its slots' episodes restart on the other workers; probed every {} ms",
               endpoint(connection.worker), reason, options_.heartbeat.count());
}

std::shared_ptr<EnvClient> WorkerPool::connect(int worker, std::string& failure) const {
  try {
    return std::make_shared<EnvClient>(endpoint(worker), options_.timeout);
  } catch (const ServerError& e) {
    failure = e.what();
    return nullptr;
  }
}

void WorkerPool::heartbeat_loop() {
  std::unique_lock lock(mutex_);
  while (!stop_signal_.wait_for(lock, options_.heartbeat, [this] { return stopping_; })) {
    for (int w = 0; w < size() && !stopping_; ++w) {
      lock.unlock();  // a ping or probe may take a whole timeout
      check(w);
      lock.lock();
    }
  }
}

void WorkerPool::check(int worker) {
  std::shared_ptr<EnvClient> client;
  {
    const std::lock_guard lock(mutex_);
    client = workers_[worker].client;
  }
  if (client) {
    try {
      client->ping();
    } catch (const ServerError& e) {
      report_failure({worker, client}, e.what());
    }
    return;
  }
  std::string failure;
  client = connect(worker, failure);
  const std::lock_guard lock(mutex_);
  if (!client) {
    workers_[worker].last_failure = failure;
    return;
  }
  workers_[worker].client = std::move(client);
  spdlog::info("env worker {} answers again: new episodes may run on it", endpoint(worker));
}

}  // namespace turnrl::trainer
