#pragma once
// Fixed-turn rollouts: every collection yields exactly n_env x e_len turns. Episodes continue
// across collections and auto-reset with fresh seeds: episode k of slot i (k = 0, 1, ...) has id
// i + N * k and seed first_episode_seed + i + N * k (N: the run's slots, n_env unless the rollout
// is one rank's share), so seeds never repeat within a run and stay in a range the caller keeps
// apart from its evaluation seeds. With group_size G, the G slots of a group share their k-th seed
// instead (G samples from one start state): first_episode_seed + i / G + (N / G) * k.
//
// Lost envs: when a step throws envs::EnvLost (a remote env whose server died, stopped answering
// or forgot it), the slot abandons its episode and begins its next one, on whichever worker the env
// moves to at reset: the new episode gets the slot's next id and seed by the rule above, so its
// seed is fresh, never another slot's (beyond its group's), and in the same range the caller keeps
// apart from evaluation seeds. The abandoned episode's last turn in the collection is marked
// truncated, so the learner's return chain ends there instead of running into the new episode,
// as at a time limit; the lost turn is not counted (the slot still plays exactly e_len turns), and
// the restart is recorded in RolloutBatch::restarts.
//
// Agent errors: when a slot's request fails (the agent threw, or an HTTP request timed out after
// its retries), the slot plays the env's default action for that turn, the episode ends there
// (truncated), the error is logged and kept in the turn's record, and the slot begins its next
// episode: no turn is lost or played twice.
//
// Design: one fiber per slot (trainer/rollout/slot_fibers.h) reads like a single episode's loop:
// build the prompt, await the reply (ReplyDispatcher: per-request submit for asynchronous agents,
// batched act() otherwise, or lock-step), step, record. Only the slot waits; the thread runs the
// slots whose replies are back. A slot's turns depend only on its own env, seeds and replies, so
// the data equal a lock-step run's for the same seeds.
#include <functional>
#include <memory>
#include <vector>

#include <nlohmann/json.hpp>

#include "agents/agent.h"
#include "envs/env_lost.h"
#include "trainer/rollout/env_slot.h"
#include "trainer/rollout/rollout_buffer.h"

namespace turnrl::trainer {

class ReplyDispatcher;  // trainer/rollout/reply_dispatcher.h
class ProgressLine;     // trainer/rollout/progress_line.h

struct RolloutConfig {
  int n_env = 4;
  int e_len = 8;
  /** Prompts per act() call for agents without asynchronous submit; 0: half the slots (one batch
   *  generates while the other's slots step). */
  size_t batch_size = 0;
  /** Every turn waits for every slot's reply (one act() call for all; Verlog's loop), for comparison. */
  bool lock_step = false;
  /** Seconds between progress lines during a collection (0: none). */
  double progress_s = 0.0;
  uint64_t seed = 0;  // reply sampling and the slots' translation choices
  uint64_t first_episode_seed = 0;
  int group_size = 1;  // divides n_env
  /** A data-parallel rank plays slots first_slot .. first_slot + n_env - 1 of a run of run_slots
   *  (0: n_env) slots, under those slots' ids and seeds: the ranks' episodes and seeds are then
   *  disjoint, and together they are those of one process with run_slots slots. Slot numbers in
   *  the batch (TurnRecord::slot, ...) and those the EnvFactory gets are the run's. */
  int first_slot = 0;
  int run_slots = 0;
  TurnSettings turn;
  /** Record each turn's Env::state_hash() before its action (GiGPO's anchor states). */
  bool record_state_hashes = false;
  /**
   * Observer of finished turns (the streaming reward stage sends samples to its workers from here):
   * called once per turn played, as soon as its record is complete, on the thread that runs collect(),
   * with the turn's row in the collection being built. A turn whose env was lost is not played and not
   * reported. Must return quickly and copy what it keeps: a later lost env may still mark the row of
   * its episode's last turn truncated (the record is final otherwise). Empty: no observer.
   */
  std::function<void(size_t row, const TurnRecord& turn)> on_turn_finished;
};

/** The first response token whose text reaches past `action_begin` (the reply's byte offset where
 *  the action text starts); token_text_ends.size() when none does. */
int action_token_start(const std::vector<uint32_t>& token_text_ends, size_t action_begin);

class Rollout {
 public:
  using EnvFactory = std::function<std::unique_ptr<envs::Env>(int slot)>;  // the run's slot number
  /** Validates the config (std::invalid_argument) and begins the first episode of every slot. */
  Rollout(const EnvFactory& make_env, agents::Agent& agent, RolloutConfig config);

  /** One collection of n_env x e_len turns (config().e_len when `e_len` is 0). */
  RolloutBatch collect(int e_len = 0);
  const RolloutConfig& config() const { return config_; }

  /** Everything later collections depend on: per slot, the episodes begun and the replies of the
   *  episode in flight (small: envs and memories are rebuilt by replaying them). */
  nlohmann::json state() const;
  /** Restores state(): the episodes in flight continue exactly where they were. */
  void restore(const nlohmann::json& state);

 private:
  struct Slot {
    std::unique_ptr<EnvSlot> env;
    uint64_t episode_id = 0;
    uint64_t episodes_begun = 0;
    std::vector<size_t> episode_rows;  // rows of the current episode in this collection
  };
  void begin_episode(int slot);
  /** Slot `slot`'s fiber: its e_len turns of the collection, then its bootstrap prompt. */
  void play_slot(int slot, int e_len, RolloutBatch& batch, ReplyDispatcher& replies, ProgressLine& progress,
                 const std::function<bool()>& stopping);
  /** Fills `record` with the played turn; the place to observe finished turns. */
  void record_turn(TurnRecord& record, agents::AgentReply&& reply, const TurnOutcome& outcome);
  /** The slot's episode ended with `outcome`: summary, reward normalisation, next episode. */
  void end_episode(int slot, RolloutBatch& batch, const TurnOutcome& outcome);
  /** Abandons the slot's episode after `lost` and begins its next one (see the top of this file). */
  EpisodeRestart restart_lost_episode(int slot, RolloutBatch& batch, const envs::EnvLost& lost);
  /** The run's number of the rollout's `slot`, and the run's slot count. */
  int run_slot(int slot) const { return config_.first_slot + slot; }
  uint64_t run_slots() const { return static_cast<uint64_t>(config_.run_slots); }
  /** Id and seed of the k-th episode (0-based) of the rollout's `slot`. */
  uint64_t episode_id(int slot, uint64_t k) const;
  uint64_t episode_seed(int slot, uint64_t k) const;
  agents::AgentPrompt prompt_of(int slot, std::vector<memory::ChatMessage> messages) const;

  agents::Agent& agent_;
  RolloutConfig config_;
  memory::TokenCounter count_;
  std::vector<Slot> slots_;
};

}  // namespace turnrl::trainer
