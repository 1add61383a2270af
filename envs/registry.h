#pragma once
// The registry of environment ids. Families register explicitly (no static self-registration,
// which a static library silently drops).
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "envs/env.h"
#include "envs/expert.h"
#include "envs/reply_parser.h"

namespace turnrl::envs {

class GoldenReplayer;

/** One option a family's make() accepts, for listings and validation messages. */
struct OptionSpec {
  std::string name, default_value, description;
};

/** Everything the registry knows about one environment family (e.g. "babyai"). */
struct EnvFamily {
  std::string name;
  std::vector<std::string> ids;
  /** The actions every env of the family lists (index = native action id), known without building one. */
  std::vector<ActionSpec> actions;
  std::vector<OptionSpec> options;
  /** The words of the family's texts (prompts, observations, action names), for word-level
   *  tokenizers such as the tiny preset's; words another family already lists may be left out. */
  std::vector<std::string> vocabulary;
  /** What of a reply Verlog keeps in the history for this family (verlog.md 4.4). */
  HistoryEntry verlog_history_entry = HistoryEntry::kRawReply;
  /** Builds env `id` with family-specific options (a JSON object; unknown keys are errors). */
  std::function<std::unique_ptr<Env>(const std::string& id, const nlohmann::json& options)> make;
  /** The sights the family's scripted expert plays with (empty: it has none), and its move in the
   *  state of one of the family's envs (envs/expert.h). */
  std::vector<ExpertSight> expert_sights;
  std::function<ExpertMove(const Env& env, uint64_t seed, ExpertSight sight)> expert;
  /** Returns a replayer when the first record of a golden file is in this family's format. */
  std::function<std::unique_ptr<GoldenReplayer>(const nlohmann::json& first_record)> replayer;
};

/** An integer env option with its default and allowed range. */
struct IntOption {
  std::string name;
  int default_value, min, max;
  std::string description;
};
std::vector<OptionSpec> describe(const std::vector<IntOption>& options);
/** Reads `options` (a JSON object) for env `id`: every key must be one of `allowed`, each value an
 *  integer in its range; throws std::invalid_argument naming the key. Returns values in `allowed` order. */
std::vector<int> read_int_options(const std::string& id, const nlohmann::json& options, const std::vector<IntOption>& allowed);

const std::vector<EnvFamily>& env_families();
std::vector<std::string> env_ids();
/** The family of env `id`; throws std::invalid_argument listing the valid ids when unknown. */
const EnvFamily& family_of(const std::string& id);
/** Throws std::invalid_argument listing the valid ids when `id` is unknown. */
std::unique_ptr<Env> make_env(const std::string& id, const nlohmann::json& options);
std::unique_ptr<Env> make_env(const std::string& id);

}  // namespace turnrl::envs
