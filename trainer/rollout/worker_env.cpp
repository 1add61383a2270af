#include "trainer/rollout/worker_env.h"

#include "envs/env_lost.h"

namespace turnrl::trainer {

using envs::server::ServerError;

WorkerEnv::WorkerEnv(std::shared_ptr<WorkerPool> pool, int home_worker, std::string env_id, nlohmann::json options)
    : pool_(std::move(pool)), home_worker_(home_worker), env_id_(std::move(env_id)), options_(std::move(options)) {
  place();
  actions_ = remote_->actions();
  default_action_ = remote_->default_action();
  text_rules_ = remote_->text_rules();
}

WorkerEnv::~WorkerEnv() {
  if (remote_) pool_->release(connection_.worker);
}

void WorkerEnv::place() {
  for (;;) {
    WorkerConnection chosen = pool_->choose(home_worker_);  // throws when every worker is down
    if (remote_ && chosen.client == connection_.client) return;
    std::unique_ptr<envs::server::RemoteEnv> moved;
    try {
      moved = std::make_unique<envs::server::RemoteEnv>(chosen.client, env_id_, options_);
    } catch (const ServerError& e) {
      pool_->report_failure(chosen, e.what());
      continue;
    }
    if (remote_) pool_->release(connection_.worker);
    remote_ = std::move(moved);  // the old env closes its slot (at once on a connection given up on)
    connection_ = std::move(chosen);
    pool_->attach(connection_.worker);
    return;
  }
}

void WorkerEnv::reset(uint64_t seed) {
  for (;;) {
    place();
    try {
      remote_->reset(seed);
      return;
    } catch (const ServerError& e) {
      pool_->report_failure(connection_, e.what());
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

void WorkerEnv::lost(const ServerError& error) const {
  pool_->report_failure(connection_, error.what());
  throw envs::EnvLost(pool_->endpoint(connection_.worker), error.what());
}

}  // namespace turnrl::trainer
