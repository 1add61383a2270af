#pragma once
// The one failure an Env may report that is not the caller's fault: an env whose state lives in
// another process (an env server) lost it or cannot reach it any more.
#include <stdexcept>
#include <string>

namespace turnrl::envs {

/**
 * Thrown by Env::step() (or a state query) when the env's state is gone or out of reach: its
 * server died, stopped answering or dropped the env. The episode in flight cannot go on; a later
 * reset() begins a new one wherever the env can live now (rollouts restart the slot's episode).
 */
class EnvLost : public std::runtime_error {
 public:
  /** `where`: what held the state (a server's endpoint), for logs and restart records. */
  EnvLost(std::string where, const std::string& reason) : std::runtime_error(reason), where_(std::move(where)) {}
  const std::string& where() const { return where_; }

 private:
  std::string where_;
};

}  // namespace turnrl::envs
