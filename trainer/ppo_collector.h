#pragma once
// The PPO learner's fixed-turn collection: n_env slots step in lock-step, one batched generation
// per turn on the actor module being trained, each turn through the rollouts' EnvSlot (parse,
// default action, penalty, memory); episodes run on across collections.
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "agents/language_model.h"
#include "agents/qwen2_model.h"
#include "agents/tokenizer.h"
#include "envs/env.h"
#include "memory/history.h"
#include "trainer/env_slot.h"
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
  std::vector<int32_t> prompt_ids(const EnvSlot& slot) const;
  /** A slot for `env` with the configured memory window, reply parsing and rewards. */
  std::unique_ptr<EnvSlot> make_slot(std::unique_ptr<envs::Env> env, uint64_t rng_seed) const;
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
   *  flight as its seed and replies (small; envs and memories are rebuilt by replay). */
  nlohmann::json state() const;
  /** Restores state(): episodes in flight continue exactly where they were. */
  void restore(const nlohmann::json& state);

 private:
  struct Slot {
    std::unique_ptr<EnvSlot> env;
    EpisodeStats stats;
  };

  const TrainConfig& config_;
  const agents::Tokenizer& tokenizer_;
  Actor actor_;
  std::vector<Slot> slots_;
  uint64_t next_seed_;
  int64_t next_episode_ = 0;
  uint64_t generation_seed_;
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
