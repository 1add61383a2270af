#pragma once
// Golden-trajectory replay: each family turns the inputs of a golden record (seed, action)
// into its own record; the comparison over the recorded fields is generic.
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "envs/env.h"

namespace turnrl::envs {

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
};

/** Steps `env` with the golden line's `action`; returns the fields every step record shares
 *  (action_text, reward, terminated, truncated). */
nlohmann::json replay_step(Env& env, const nlohmann::json& golden_line);

/** A difference between a golden field and ours; `path` names the field (e.g. `grid[3]`). */
struct FieldMismatch {
  std::string path;
  std::string expected;
  std::string got;
};

/** First difference between `expected` and `got` (numbers compare exactly), or nullopt. */
std::optional<FieldMismatch> first_difference(const nlohmann::json& expected, const nlohmann::json& got,
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

}  // namespace turnrl::envs
