#include "envs/arith/arith_family.h"

#include <stdexcept>

#include "envs/arith/arith_env.h"

namespace turnrl::envs::arith {
namespace {

std::unique_ptr<Env> make(const std::string& id, const nlohmann::json& options) {
  if (id != "arith/single" && id != "arith/multi") throw std::invalid_argument("unknown arith env id '" + id + "'");
  const std::vector<int> values = read_int_options(id, options, {{"steps", 3, 1, 8}, {"max_value", 999, 2, 9999}});
  return std::make_unique<ArithEnv>(id, id == "arith/single" ? Mode::kSingle : Mode::kMulti, values[0], values[1]);
}

}  // namespace

EnvFamily arith_family() {
  EnvFamily family;
  family.name = "arith";
  family.ids = {"arith/single", "arith/multi"};
  family.make = make;
  return family;
}

}  // namespace turnrl::envs::arith
