#pragma once
// `turnrl bench <name>`: each benchmark in its own file, measured against its reference in one run.
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace turnrl::tools {

int bench_env(int argc, char** argv);
int bench_expert(int argc, char** argv);
int bench_llm(int argc, char** argv);
int bench_crafter(int argc, char** argv);
int bench_rollout(int argc, char** argv);
int bench_sweep(int argc, char** argv);
int bench_serve(int argc, char** argv);
int bench_env_server(int argc, char** argv);
int bench_reward(int argc, char** argv);
int bench_allocator(int argc, char** argv);
int bench_update(int argc, char** argv);

/** Runs `command` and returns what it printed, or nullopt with a warning when it could not start or failed. */
std::optional<std::string> command_output(const std::string& command);
/** The last line of `output` that is a JSON object with the number `key`. */
std::optional<nlohmann::json> last_json_with(const std::string& output, const std::string& key);

/** Runs a reference command (e.g. a Python runner) and returns the `steps_per_sec` of the last
 *  JSON line it prints, or nullopt with a warning when it fails. */
std::optional<double> run_reference_steps_per_sec(const std::string& command);

}  // namespace turnrl::tools
