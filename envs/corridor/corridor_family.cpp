#include "envs/corridor/corridor_family.h"

#include <stdexcept>

#include <nlohmann/json.hpp>

#include "envs/corridor/corridor_env.h"

namespace turnrl::envs::corridor {
namespace {

const std::vector<IntOption>& options_accepted() {
  static const std::vector<IntOption> options = {{"length", 0, 0, 1000, "cells in the corridor (0: the id's length)"}};
  return options;
}

std::unique_ptr<Env> make(const std::string& id, const nlohmann::json& options) {
  const int length = read_int_options(id, options, options_accepted())[0];
  if (id == "corridor/short") return std::make_unique<CorridorEnv>(id, length > 0 ? length : 5);
  if (id == "corridor/long") return std::make_unique<CorridorEnv>(id, length > 0 ? length : 9);
  throw std::invalid_argument("unknown corridor env id '" + id + "'");
}

}  // namespace

EnvFamily corridor_family() {
  EnvFamily family;
  family.name = "corridor";
  family.ids = {"corridor/short", "corridor/long"};
  family.actions = CorridorEnv::action_list();
  family.options = describe(options_accepted());
  family.vocabulary = {"corridor", "exit", "reach", "wait", "stay", "where", "steps", "step", "right", "left", "the"};
  family.make = make;
  return family;
}

}  // namespace turnrl::envs::corridor
