#include "envs/server/remote_env.h"

#include <stdexcept>

#include <spdlog/spdlog.h>

namespace turnrl::envs::server {

RemoteEnv::RemoteEnv(std::shared_ptr<EnvClient> client, const std::string& env_id, const nlohmann::json& options)
    : client_(std::move(client)) {
  std::vector<SlotInfo> infos = client_->create({CreateItem{std::nullopt, env_id, options}});
  if (infos.size() != 1) throw ServerError("env server: a create reply for one env holds " + std::to_string(infos.size()));
  info_ = std::move(infos.front());
}

RemoteEnv::~RemoteEnv() {
  try {
    client_->close({info_.slot});
  } catch (const std::exception& e) {
    // The server may be gone; it frees the slot itself once this client falls silent.
    spdlog::debug("remote env {} (slot {}): close failed: {}", info_.env_id, info_.slot, e.what());
  }
}

void RemoteEnv::reset(uint64_t seed) {
  std::vector<EpisodeStart> starts = client_->reset({ResetItem{info_.slot, seed}});
  if (starts.size() != 1) throw ServerError("env server: a reset reply for one slot holds " + std::to_string(starts.size()));
  episode_ = std::make_unique<EpisodeStart>(std::move(starts.front()));
  observation_ = episode_->observation;
  progression_ = episode_->progression;
  reference_answer_ = episode_->reference_answer;
}

StepResult RemoteEnv::step(int action) {
  check_action(action);
  episode();  // stepping before reset is misuse, caught here rather than by the server
  std::vector<StepOutcome> outcomes = client_->step({StepItem{info_.slot, action}});
  if (outcomes.size() != 1) throw ServerError("env server: a step reply for one slot holds " + std::to_string(outcomes.size()));
  observation_ = std::move(outcomes.front().observation);
  progression_ = outcomes.front().progression;
  reference_answer_ = std::move(outcomes.front().reference_answer);
  return outcomes.front().result;
}

TextObservation RemoteEnv::observe_text() const {
  episode();
  return observation_;
}

std::string RemoteEnv::render_ascii() const {
  episode();
  return client_->render(info_.slot);
}

std::string RemoteEnv::serialize_state() const {
  episode();
  return client_->state(info_.slot);
}

double RemoteEnv::progression() const {
  episode();
  return progression_;
}

std::string RemoteEnv::reference_answer() const {
  episode();
  return reference_answer_;
}

const EpisodeStart& RemoteEnv::episode() const {
  if (!episode_) throw std::logic_error("remote env " + info_.env_id + ": reset() must come first");
  return *episode_;
}

}  // namespace turnrl::envs::server
