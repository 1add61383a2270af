#pragma once
// Format data for supervised fine-tuning (`turnrl make-sft-data`, a config's format stage): episodes
// played by the random agent (a share of its actions keyed on the observation, so the model learns
// to read it) or by the env's scripted expert, writing replies from a template, each turn saved as one chat
// transcript (the prompt exactly as training builds it, then the reply) in JSON Lines:
// {"messages": [{"role": ..., "content": ...}, ..., {"role": "assistant", "content": reply}]}; past
// replies in the prompt carry "weight": 0 (context, not targets). With expert noise a share of the
// expert's turns play a random action instead and are not written, so the demonstrations also show
// the expert recovering from states its own play never reaches (DART-style noise injection).
// With a learner (DAgger, Ross et al. 2011), the learner plays and each turn is written with the
// expert's reply for the state the learner reached: the prompt as the learner saw it, past replies
// its own, the target what the expert would do there, including where the learner's mistakes led.
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "agents/agent.h"
#include "memory/history.h"
#include "envs/expert.h"
#include "trainer/config/enum_names.h"
#include "trainer/rollout/turn_settings.h"

namespace turnrl::trainer {

/** Who plays format data's episodes: random actions (RandomAgent) or the env's scripted expert. */
enum class FormatPolicy { kRandom, kExpert };
template <>
struct EnumNames<FormatPolicy> {
  static const std::vector<std::string>& names() {
    static const std::vector<std::string> n = {"random", "expert"};
    return n;
  }
};

/** How format data's episodes are played and which are written: declared once, as the `format:`
 *  section's keys (TrainConfig::Format derives from it). */
struct FormatPlay {
  std::string reply_template = "ACTION: {action}";
  FormatPolicy policy = FormatPolicy::kRandom;
  /** With the random policy, the share of turns whose action is the observation's own fixed random
   *  action (RandomAgent): actions that ignore the observation teach the model to ignore it, and PPO
   *  cannot undo that (test_learning). */
  double keyed_share = 0.5;
  /** With the expert policy, the share of turns played by a random action (and not written), in [0, 1):
   *  the expert's next turns show how to recover from where the noise led. */
  double expert_noise = 0.0;
  /** With the expert policy, what it may read: the whole state or only what the prompt shows
   *  (envs/expert.h). A model can follow the view-bound expert's choices; the full one's turn
   *  towards what it cannot see. */
  envs::ExpertSight expert_sight = envs::ExpertSight::kFull;
  /** Episodes that end below this BALROG progression are played but not written (1: the won ones),
   *  so a demonstration never teaches a loop that runs into the time limit. */
  double min_progression = 0.0;
};

struct SftDataSpec : FormatPlay {
  std::vector<std::string> tasks;  // episodes are spread over the tasks in turn
  nlohmann::json env_options = nlohmann::json::object();
  TurnSettings turn;
  uint64_t first_seed = 0;  // episode i uses first_seed + i: keep it away from evaluation seeds
  int episodes = 0;
  /** One rank's share of a data-parallel run's episodes: those i with i % ranks == rank, each with
   *  the task and seed it has in the whole set, so the ranks' files together hold that set. */
  int rank = 0, ranks = 1;
  /** The model's prompt token counter and limit, so the memory's token budget cuts as in training. */
  memory::TokenCounter token_counter;
  size_t max_prompt_tokens = 0;
};

struct SftDataCounts {
  size_t episodes_written = 0;  // those that reached min_progression
  size_t turns = 0;             // played
  size_t transcripts = 0;       // written: the turns of written episodes less the off-expert ones
  double progression_sum = 0.0; // BALROG progression summed over every episode played
  size_t guesses = 0;           // DAgger: turns not written because the expert could only guess
};

/** Plays the episodes (of this rank's share) and writes one line per demonstrated turn to `path`. With `learner`, the
 *  learner plays and every turn is written with the expert's reply (policy must be expert; no
 *  expert noise; every episode is written, whatever its progression, less the turns where the
 *  expert could only guess). */
SftDataCounts write_sft_data(const SftDataSpec& spec, const std::string& path, agents::Agent* learner = nullptr);

}  // namespace turnrl::trainer
