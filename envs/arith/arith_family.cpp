#include "envs/arith/arith_family.h"

#include <stdexcept>

#include "envs/arith/arith_env.h"

namespace turnrl::envs::arith {
namespace {

const std::vector<IntOption>& options_accepted() {
  static const std::vector<IntOption> options = {{"steps", 3, 1, 8, "operations per problem"},
                                                 {"max_value", 999, 2, 9999, "largest answer (the actions are 0..max_value)"}};
  return options;
}

std::unique_ptr<Env> make(const std::string& id, const nlohmann::json& options) {
  if (id != "arith/single" && id != "arith/multi") throw std::invalid_argument("unknown arith env id '" + id + "'");
  const std::vector<int> values = read_int_options(id, options, options_accepted());
  return std::make_unique<ArithEnv>(id, id == "arith/single" ? Mode::kSingle : Mode::kMulti, values[0], values[1]);
}

}  // namespace

EnvFamily arith_family() {
  EnvFamily family;
  family.name = "arith";
  family.ids = {"arith/single", "arith/multi"};
  family.actions = ArithEnv::answer_actions(options_accepted()[1].default_value);
  family.options = describe(options_accepted());
  family.make = make;
  return family;
}

}  // namespace turnrl::envs::arith
