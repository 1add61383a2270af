#pragma once
// The env of a rollout slot when the run has env workers: it lives in a slot of one of the pool's
// servers and may move at each reset, to its home worker whenever that one is up, else to the
// live worker with the fewest envs. A failed call during an episode throws envs::EnvLost (the
// rollout then restarts the slot's episode); a failure while beginning an episode only moves the
// env on, since no turn has been played yet. No reply gives the whole worker up; an error reply
// (a restarted server that no longer knows the slot, a full server) only loses this env's slot.
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "envs/env.h"
#include "envs/server/remote_env.h"
#include "trainer/rollout/worker_pool.h"

namespace turnrl::trainer {

class WorkerEnv final : public envs::Env {
 public:
  /** Creates the env on a live worker; std::runtime_error when none can take it. */
  WorkerEnv(std::shared_ptr<WorkerPool> pool, int home_worker, std::string env_id,
            nlohmann::json options = nlohmann::json::object());
  ~WorkerEnv() override;
  WorkerEnv(const WorkerEnv&) = delete;
  WorkerEnv& operator=(const WorkerEnv&) = delete;

  /** The worker the env lives on. */
  int worker() const { return connection_.worker; }

  const std::string& id() const override { return env_id_; }
  void reset(uint64_t seed) override;
  envs::StepResult step(int action) override;
  // The slot's description is copied here, so references to it outlive a move to another worker.
  const std::vector<envs::ActionSpec>& actions() const override { return actions_; }
  int default_action() const override { return default_action_; }
  const envs::ActionTextRules& text_rules() const override { return text_rules_; }
  int max_steps() const override { return remote_->max_steps(); }
  std::string goal() const override { return remote_->goal(); }
  std::string instruction_prompt() const override { return remote_->instruction_prompt(); }
  envs::TextObservation observe_text() const override { return remote_->observe_text(); }
  std::string render_ascii() const override;
  std::string serialize_state() const override;
  double progression() const override { return remote_->progression(); }
  std::string reference_answer() const override { return remote_->reference_answer(); }

 private:
  /** The workers that answered one placement of this env with an error, and what they said. */
  struct Refusals {
    std::vector<int> workers;
    std::string reasons;
    void add(int worker, const std::string& endpoint, const std::string& reason);
  };
  /** Moves the env to the worker the pool chooses now (none of `refusals`), unless it already
   *  lives there in a good slot; true when it took a new slot. */
  bool place(Refusals& refusals);
  /** Records a failed call: a worker without reply is given up on, an erring slot replaced at the
   *  next reset. */
  void failed(const envs::server::ServerError& error) const;
  /** failed(), then envs::EnvLost. */
  [[noreturn]] void lost(const envs::server::ServerError& error) const;

  std::shared_ptr<WorkerPool> pool_;
  int home_worker_;
  std::string env_id_;
  nlohmann::json options_;
  WorkerConnection connection_;
  std::unique_ptr<envs::server::RemoteEnv> remote_;
  mutable bool slot_lost_ = false;  // the server answered a call on remote_'s slot with an error
  std::vector<envs::ActionSpec> actions_;
  int default_action_ = 0;
  envs::ActionTextRules text_rules_;
};

}  // namespace turnrl::trainer
