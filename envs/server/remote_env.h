#pragma once
// An Env whose state lives in an env server's slot, so rollouts can use remote envs unchanged.
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "envs/env.h"
#include "envs/server/env_client.h"

namespace turnrl::envs::server {

/**
 * The Env interface over a slot of an env server. reset(), step() and render_ascii() are one
 * round trip each; everything else is answered from the last reply. Connection problems and
 * server errors throw ServerError. Several RemoteEnvs may share one client (same thread only).
 * The slot is created by the constructor and closed by the destructor.
 */
class RemoteEnv final : public Env {
 public:
  RemoteEnv(std::shared_ptr<EnvClient> client, const std::string& env_id,
            const nlohmann::json& options = nlohmann::json::object());
  ~RemoteEnv() override;
  RemoteEnv(const RemoteEnv&) = delete;
  RemoteEnv& operator=(const RemoteEnv&) = delete;

  int slot() const { return info_.slot; }

  const std::string& id() const override { return info_.env_id; }
  void reset(uint64_t seed) override;
  StepResult step(int action) override;
  const std::vector<ActionSpec>& actions() const override { return info_.actions; }
  int default_action() const override { return info_.default_action; }
  const ActionTextRules& text_rules() const override { return info_.text_rules; }
  int max_steps() const override { return episode().max_steps; }
  std::string goal() const override { return episode().goal; }
  std::string instruction_prompt() const override { return episode().instruction_prompt; }
  TextObservation observe_text() const override;
  std::string render_ascii() const override;
  std::string serialize_state() const override;
  double progression() const override;
  std::string reference_answer() const override;

 private:
  const EpisodeStart& episode() const;

  std::shared_ptr<EnvClient> client_;
  SlotInfo info_;
  std::unique_ptr<EpisodeStart> episode_;  // null until the first reset
  TextObservation observation_;
  double progression_ = 0.0;
  std::string reference_answer_;
};

}  // namespace turnrl::envs::server
