#pragma once
// Golden-trajectory replay: each family turns the inputs of a golden record (seed, action)
// into its own record; the comparison over the recorded fields is generic.
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "envs/env.h"

namespace turnrl::envs {

/** A golden line as plain Env API traffic, so that golden files replay through any Env (a remote
 *  one included): the call it records and the outputs it records, named as env_outputs.h names them. */
struct EnvApiLine {
  bool is_reset = false;
  std::string env_id;      // reset: the env to use, created again when id or options change
  nlohmann::json options;  // reset
  uint64_t seed = 0;       // reset
  int action = 0;          // step
  /** A subset of episode_outputs() (reset) or step_outputs() (step). */
  nlohmann::json expected;
};

/** Replays one golden file of one family's format. Stateful: lines must come in file order. */
class GoldenReplayer {
 public:
  virtual ~GoldenReplayer() = default;
  /** Applies the golden line's inputs (reset seed or step action) and returns our record of
   *  the result, with the same field names as the golden format. */
  virtual nlohmann::json replay(const nlohmann::json& golden_line) = 0;
  /** Fields that are inputs or metadata of the recording, not outputs to compare. */
  virtual bool is_input_field(const std::string& key) const = 0;
  /** Golden fields the port cannot reproduce by design and compares differently (documented
   *  per family); returns the expected value to compare against, or nullopt to compare as is. */
  virtual std::optional<nlohmann::json> expected_for(const std::string& /*key*/,
                                                     const nlohmann::json& /*golden_line*/) const {
    return std::nullopt;
  }
  /** The golden line as Env API traffic; nullopt from the first line the Env API cannot reach
   *  (e.g. a later episode of a Crafter seed: Env::reset(seed) starts episode 1). File order. */
  virtual std::optional<EnvApiLine> env_api_line(const nlohmann::json& golden_line) = 0;
};

/** Steps `env` with the golden line's `action`; returns the fields every step record shares
 *  (action_text, reward, terminated, truncated). */
nlohmann::json replay_step(Env& env, const nlohmann::json& golden_line);

/** A golden step line as Env API traffic: its `action`, and its `reward`, `terminated` and
 *  `truncated` with `observation` (the family's reading of the recorded text) as expected outputs. */
EnvApiLine env_api_step(const nlohmann::json& golden_line, nlohmann::json observation);

/** A difference between a golden field and ours; `path` names the field (e.g. `grid[3]`). */
struct FieldMismatch {
  std::string path;
  std::string expected;
  std::string got;
};

/** First difference between `expected` and `got` (numbers compare exactly), or nullopt. */
std::optional<FieldMismatch> first_difference(const nlohmann::json& expected, const nlohmann::json& got,
                                              const std::string& path);

/** First field of `expected` missing from or different in `got`; objects compare as subsets
 *  (`got` may hold more keys), everything else as in first_difference. */
std::optional<FieldMismatch> first_expected_difference(const nlohmann::json& expected, const nlohmann::json& got,
                                                       const std::string& path);

/** Reads a gzip'd (or plain) JSON Lines file. Throws std::runtime_error naming the file and line. */
std::vector<nlohmann::json> read_jsonl(const std::string& path);
/** Writes records as gzip'd JSON Lines (for recordings and tests). */
void write_jsonl_gz(const std::string& path, const std::vector<nlohmann::json>& records);

struct ReplayMismatch {
  int episode = 0;  // 1-based index of the reset record in the file
  long line = 0;    // 1-based line number
  long step = 0;    // steps since that reset
  FieldMismatch field;
};

struct ReplayReport {
  int episodes = 0;
  int exact_episodes = 0;
  long lines = 0;
  std::optional<ReplayMismatch> first_mismatch;
};

/** Replays every episode of a golden file; throws std::runtime_error for malformed files. */
ReplayReport replay_golden_file(const std::string& path);

/** A golden file as Env API traffic: its lines up to the first one the Env API cannot reach. */
struct EnvApiScript {
  std::vector<EnvApiLine> lines;
  long golden_lines = 0;  // lines in the file (more than lines.size() when the rest is unreachable)
};
/** Throws std::runtime_error for records in no known golden format. */
EnvApiScript env_api_script(const std::vector<nlohmann::json>& records);

using EnvMaker = std::function<std::unique_ptr<Env>(const std::string& id, const nlohmann::json& options)>;
/** Runs `script` through envs built by `make` (in-process with make_env, or remote) and compares
 *  each line's expected outputs with the env's. Script lines are the file's first lines, so the
 *  report's line numbers are the file's. */
ReplayReport replay_env_api_script(const EnvApiScript& script, const EnvMaker& make);

}  // namespace turnrl::envs
