#pragma once
#include "envs/babyai/level.h"
#include "envs/registry.h"

namespace turnrl::envs::babyai {

/** Ids `babyai/<task>`, option `num_dists` (default 0), and the golden-file replayer. */
EnvFamily babyai_family();
/** The distractor count of env options (a JSON object, as make_env takes them); throws
 *  std::invalid_argument for unknown keys and counts outside [0, 20]. */
int read_num_dists(const std::string& id, const nlohmann::json& options);

/** The five BALROG tasks: the id suffix after "babyai/" and the task. */
struct TaskId {
  const char* suffix;
  Task task;
};
extern const TaskId kTasks[5];

}  // namespace turnrl::envs::babyai
