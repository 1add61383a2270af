#include "envs/env.h"

#include <stdexcept>

namespace turnrl::envs {

void Env::check_action(int action) const {
  if (action < 0 || action >= num_actions()) {
    throw std::out_of_range("env " + id() + ": action " + std::to_string(action) +
                            " is out of range [0, " + std::to_string(num_actions()) + ")");
  }
}

}  // namespace turnrl::envs
