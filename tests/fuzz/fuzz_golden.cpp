// Fuzzes golden replay with arbitrary JSON Lines: the file replayed by its family's replayer
// (replay_golden_file, documented to throw std::runtime_error for malformed files), and the same
// lines as Env API traffic (env_api_script, then replay_env_api_script over make_env, where the
// registry's std::invalid_argument and Env misuse's std::out_of_range are clean too).
#include <stdexcept>
#include <string>
#include <vector>

#include "envs/golden.h"
#include "envs/registry.h"
#include "fuzz_util.h"

using namespace turnrl;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = fuzz::write_input_file("golden", data, size);
  try {
    envs::replay_golden_file(path);
  } catch (const std::runtime_error&) {
  }
  std::vector<nlohmann::json> records;
  envs::EnvApiScript script;
  try {
    records = envs::read_jsonl(path);
    script = envs::env_api_script(records);
  } catch (const std::runtime_error&) {
    return 0;
  }
  try {
    envs::replay_env_api_script(script, [](const std::string& id, const nlohmann::json& options) {
      return envs::make_env(id, options);
    });
  } catch (const std::invalid_argument&) {
  } catch (const std::out_of_range&) {
  }
  return 0;
}
