// Fuzzes the YAML config reader: the input as a training config (TrainConfig::load) and as a
// `turn:` section alone (read_turn_settings). std::invalid_argument is the one clean rejection
// (`file:line: key: problem`); any other exception, a crash or UB is a finding. An accepted config
// must also survive its own resolved form: eval --run and resume read back what to_yaml wrote.
#include <cstdio>
#include <stdexcept>
#include <string>

#include "fuzz_util.h"
#include "trainer/config/config_reader.h"
#include "trainer/rollout/turn_settings.h"
#include "trainer/config/train_config.h"

using namespace turnrl;
using turnrl::fuzz::check;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = fuzz::write_input_file("config", data, size);
  try {
    trainer::read_turn_settings(trainer::ConfigSection(path, trainer::load_yaml_file(path), "turn"));
  } catch (const std::invalid_argument&) {
  }
  std::string resolved;
  try {
    resolved = trainer::TrainConfig::load(path).to_yaml();
  } catch (const std::invalid_argument&) {
    return 0;
  }
  const std::string resolved_path =
      fuzz::write_input_file("config", reinterpret_cast<const uint8_t*>(resolved.data()), resolved.size());
  std::string again;
  try {
    again = trainer::TrainConfig::load(resolved_path).to_yaml();
  } catch (const std::invalid_argument& e) {
    std::fprintf(stderr, "%s\n", e.what());
    check(false, "a resolved config is accepted");
  }
  check(again == resolved, "a resolved config reads back as itself");
  return 0;
}
