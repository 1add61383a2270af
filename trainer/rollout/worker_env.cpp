#include "trainer/rollout/worker_env.h"

#include <stdexcept>

#include "envs/env_lost.h"

namespace turnrl::trainer {

using envs::server::ServerError;
using envs::server::ServerUnreachable;

WorkerEnv::WorkerEnv(std::shared_ptr<WorkerPool> pool, int home_worker, std::string env_id, nlohmann::json options)
    : pool_(std::move(pool)), home_worker_(home_worker), env_id_(std::move(env_id)), options_(std::move(options)) {
  Refusals refusals;
  place(refusals);
  actions_ = remote_->actions();
  default_action_ = remote_->default_action();
  text_rules_ = remote_->text_rules();
}

WorkerEnv::~WorkerEnv() {
  if (remote_) pool_->release(connection_.worker);
}

void WorkerEnv::Refusals::add(int worker, const std::string& endpoint, const std::string& reason) {
  workers.push_back(worker);
  reasons += (reasons.empty() ? "" : "; ") + endpoint + ": " + reason;
}

bool WorkerEnv::place(Refusals& refusals) {
  for (;;) {
    std::optional<WorkerConnection> chosen = pool_->choose(home_worker_, refusals.workers);
    if (!chosen) {
      const std::string down = pool_->failures();
      throw std::runtime_error("env " + env_id_ + ": no env worker can take it (" + refusals.reasons +
                               (refusals.reasons.empty() || down.empty() ? "" : "; ") + down + ")");
    }
    if (remote_ && !slot_lost_ && chosen->client == connection_.client) return false;
    std::unique_ptr<envs::server::RemoteEnv> moved;
    try {
      moved = std::make_unique<envs::server::RemoteEnv>(chosen->client, env_id_, options_);
    } catch (const ServerUnreachable& e) {
      pool_->report_failure(*chosen, e.what());
      continue;
    } catch (const ServerError& e) {  // e.g. a full server
      refusals.add(chosen->worker, pool_->endpoint(chosen->worker), e.what());
      continue;
    }
    if (remote_) pool_->release(connection_.worker);
    remote_ = std::move(moved);  // the old env closes its slot (at once on a connection given up on)
    connection_ = std::move(*chosen);
    slot_lost_ = false;
    pool_->attach(connection_.worker);
    return true;
  }
}

void WorkerEnv::reset(uint64_t seed) {
  Refusals refusals;
  for (;;) {
    const bool new_slot = place(refusals);
    try {
      remote_->reset(seed);
      return;
    } catch (const ServerError& e) {
      failed(e);
      // An old slot the server forgot is replaced on the same worker; a new one it refuses, elsewhere.
      if (slot_lost_ && new_slot) refusals.add(connection_.worker, pool_->endpoint(connection_.worker), e.what());
    }
  }
}

envs::StepResult WorkerEnv::step(int action) {
  try {
    return remote_->step(action);
  } catch (const ServerError& e) {
    lost(e);
  }
}

std::string WorkerEnv::render_ascii() const {
  try {
    return remote_->render_ascii();
  } catch (const ServerError& e) {
    lost(e);
  }
}

std::string WorkerEnv::serialize_state() const {
  try {
    return remote_->serialize_state();
  } catch (const ServerError& e) {
    lost(e);
  }
}

void WorkerEnv::failed(const ServerError& error) const {
  if (dynamic_cast<const ServerUnreachable*>(&error)) {
    pool_->report_failure(connection_, error.what());
  } else {
    slot_lost_ = true;
  }
}

void WorkerEnv::lost(const ServerError& error) const {
  failed(error);
  throw envs::EnvLost(pool_->endpoint(connection_.worker), error.what());
}

}  // namespace turnrl::trainer
