#include "envs/env.h"

#include <algorithm>
#include <stdexcept>

#include "envs/common/sha256.h"
#include "envs/common/state_writer.h"

namespace turnrl::envs {

std::string ActionSpec::joined_name() const {
  std::string joined = name;
  std::replace(joined.begin(), joined.end(), ' ', '_');
  return joined;
}

void Env::check_action(int action) const {
  if (action < 0 || action >= num_actions()) {
    throw std::out_of_range("env " + id() + ": action " + std::to_string(action) +
                            " is out of range [0, " + std::to_string(num_actions()) + ")");
  }
}

std::string Env::state_hash() const {
  StateWriter writer;
  writer.put(id());
  const std::string bytes = writer.take() + serialize_state();
  return sha256_hex(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
}

}  // namespace turnrl::envs
