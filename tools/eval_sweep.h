#pragma once
// An evaluation sweep (`turnrl eval --config`, `turnrl bench sweep`): models x tasks x episodes x
// repeats, appended to <output_dir>/episodes.jsonl as each episode ends (and written in BALROG's
// layout, balrog_layout.h), then the summaries. The file is
// the sweep's state: a rerun plays exactly the episodes without a finished record, those never
// started and those an agent error ended (recorded with `error`, left out of the summaries).
#include <cstddef>
#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

#include "tools/eval_config.h"
#include "trainer/rollout/episode_runner.h"

namespace turnrl::tools {

constexpr double kEvalProgressSeconds = 5.0;  // between an evaluation's progress lines (episodes done, turns/s, ETA)

struct SweepTally {
  size_t played = 0;      // episodes this run played
  size_t finished = 0;    // of them, ended by the env
  size_t unfinished = 0;  // of them, ended by an agent error: the next run plays them again
  std::string summary_markdown;  // of every finished episode in the file
};

/** Runs the episodes of `config` that episodes.jsonl lacks a finished record of, and writes the
 *  summaries. Throws the first env error, or a malformed episodes.jsonl. */
SweepTally run_sweep(const EvalConfig& config);

/** The env family of an env id (its part before '/'). */
std::string family_of(const std::string& env_id);
/** An episode as a line of episodes.jsonl; `error`: the agent error that ended it, if one did. */
nlohmann::json episode_record(const std::string& model, const trainer::EpisodeLog& log, int episode, int repeat = 0);
void write_file(const std::filesystem::path& path, const std::string& text);

}  // namespace turnrl::tools
