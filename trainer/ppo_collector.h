#pragma once
// The PPO learner's fixed-turn collection: n_env slots step in lock-step, one batched generation
// per turn on the actor module being trained (trainer/rollout.h is the agent-driven, pipelined
// collection for evaluation and remote models); episodes run on across collections.
#include <memory>
#include <string>
#include <random>
#include <vector>

#include <nlohmann/json.hpp>

#include "agents/language_model.h"
#include "agents/qwen2_model.h"
#include "agents/tokenizer.h"
#include "envs/action_parser.h"
#include "envs/env.h"
#include "memory/history.h"
#include "trainer/train_config.h"
#include "trainer/turn_batch.h"

namespace turnrl::trainer {

struct EpisodeStats {
  int64_t episode = 0;
  double total_reward = 0.0;
  int length = 0;
  double progression = 0.0;
  int invalid_turns = 0;
};

/** Turns a TrainConfig into what acting needs: prompts, decoding constraints and reply parsing. */
class Actor {
 public:
  /** `task_envs`: one env per task, whose action names make up the allowed tokens. */
  Actor(const TrainConfig& config, const agents::Tokenizer& tokenizer,
        const std::vector<std::unique_ptr<envs::Env>>& task_envs);
  const std::vector<int32_t>& allowed_tokens() const { return allowed_tokens_; }
  agents::SamplingParams sampling(bool greedy, uint64_t seed) const;
  std::vector<int32_t> prompt_ids(const memory::History& history) const;
  /** The window for one episode in the configured layout. */
  memory::History make_history() const;
  /** The first message: BALROG's instruction prompt, or the goal line for the compact layout. */
  std::string instruction(const envs::Env& env) const;
  /** The reply text without its stop token. */
  std::string reply_text(const std::vector<int32_t>& ids) const;
  /** First response token of the action: 0 when decoding is constrained to action tokens, else
   *  the first token with text after the last "ACTION:", or ids.size() when there is none. */
  int action_token_start(const std::vector<int32_t>& ids) const;

 private:
  const TrainConfig& config_;
  const agents::Tokenizer& tokenizer_;
  std::vector<int32_t> allowed_tokens_;
};

class PpoCollector {
 public:
  PpoCollector(const TrainConfig& config, const agents::Tokenizer& tokenizer, uint64_t seed);
  /** Exactly n_env x e_len turns; finished episodes' statistics are appended to `finished`. */
  TurnBatch collect(agents::Qwen2Model& policy, int e_len, std::vector<EpisodeStats>& finished);
  const Actor& actor() const { return actor_; }

  /** Everything the next collections depend on: the seed streams and, per slot, the episode in
   *  flight as its seed and the steps taken (small; envs and memories are rebuilt by replay). */
  nlohmann::json state() const;
  /** Restores state(): episodes in flight continue exactly where they were. */
  void restore(const nlohmann::json& state);

 private:
  struct Step {
    int action = 0;
    bool valid = false;
    std::string reply;
  };
  struct Slot {
    Slot(std::unique_ptr<envs::Env> env_, memory::History history_) : env(std::move(env_)), history(std::move(history_)) {}
    std::unique_ptr<envs::Env> env;
    memory::History history;
    EpisodeStats stats;
    bool needs_reset = true;
    uint64_t seed = 0;
    std::vector<Step> steps;  // of the episode in flight
  };
  void start_episode(Slot& slot, uint64_t seed);
  /** Steps the env and feeds the memory; the one place a turn changes a slot (collect and replay). */
  envs::StepResult take_step(Slot& slot, const Step& step);

  const TrainConfig& config_;
  const agents::Tokenizer& tokenizer_;
  std::vector<Slot> slots_;
  Actor actor_;
  uint64_t next_seed_;
  int64_t next_episode_ = 0;
  uint64_t generation_seed_;
  std::mt19937_64 parse_rng_;
};

/** Mean progression, reward and length of one task's evaluation episodes. */
struct EvalResult {
  std::string task;
  double success = 0.0;
  double mean_reward = 0.0;
  double mean_length = 0.0;
};
/** `episodes` greedy (or sampled) episodes per task on seeds first_seed, first_seed + 1, ...,
 *  all tasks in one batch per turn; one result per task, in config order. */
std::vector<EvalResult> evaluate(const TrainConfig& config, const agents::Tokenizer& tokenizer,
                                 agents::Qwen2Model& policy, uint64_t first_seed, int episodes, bool greedy);

}  // namespace turnrl::trainer
