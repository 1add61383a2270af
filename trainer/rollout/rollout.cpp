#include "trainer/rollout/rollout.h"

#include <algorithm>
#include <chrono>
#include <random>
#include <stdexcept>
#include <string>

#include <spdlog/spdlog.h>

#include "trainer/rollout/progress_line.h"
#include "trainer/rollout/reply_dispatcher.h"
#include "trainer/rollout/slot_fibers.h"

namespace turnrl::trainer {
namespace {

uint64_t mix(uint64_t a, uint64_t b) {
  std::seed_seq sequence{static_cast<uint32_t>(a), static_cast<uint32_t>(a >> 32), static_cast<uint32_t>(b),
                         static_cast<uint32_t>(b >> 32)};
  uint32_t out[2];
  sequence.generate(out, out + 2);
  return (static_cast<uint64_t>(out[0]) << 32) | out[1];
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

int action_token_start(const std::vector<uint32_t>& token_text_ends, size_t action_begin) {
  const auto first = std::upper_bound(token_text_ends.begin(), token_text_ends.end(), action_begin);
  return static_cast<int>(first - token_text_ends.begin());
}

Rollout::Rollout(const EnvFactory& make_env, agents::Agent& agent, RolloutConfig config)
    : agent_(agent), config_(std::move(config)), count_(agent.token_counter()) {
  if (config_.n_env <= 0) throw std::invalid_argument("rollout: n_env must be > 0, got " + std::to_string(config_.n_env));
  if (config_.e_len <= 0) throw std::invalid_argument("rollout: e_len must be > 0, got " + std::to_string(config_.e_len));
  if (config_.group_size <= 0 || config_.n_env % config_.group_size != 0) {
    throw std::invalid_argument("rollout: group_size " + std::to_string(config_.group_size) + " must divide n_env " +
                                std::to_string(config_.n_env));
  }
  if (config_.run_slots == 0) config_.run_slots = config_.n_env;
  if (config_.first_slot < 0 || config_.first_slot % config_.group_size != 0 || config_.run_slots % config_.group_size != 0 ||
      config_.first_slot + config_.n_env > config_.run_slots) {
    throw std::invalid_argument("rollout: slots " + std::to_string(config_.first_slot) + ".." +
                                std::to_string(config_.first_slot + config_.n_env - 1) + " are no whole groups of " +
                                std::to_string(config_.group_size) + " among the run's " + std::to_string(config_.run_slots));
  }
  for (int i = 0; i < config_.n_env; ++i) {
    Slot slot;
    slot.env = std::make_unique<EnvSlot>(make_env(run_slot(i)), config_.turn, mix(config_.seed, run_slot(i)), agent_.max_prompt_tokens());
    slots_.push_back(std::move(slot));
  }
  for (int i = 0; i < config_.n_env; ++i) begin_episode(i);
}

void Rollout::begin_episode(int index) {
  Slot& slot = slots_[index];
  slot.episode_id = episode_id(index, slot.episodes_begun++);
  slot.episode_rows.clear();
  slot.env->begin_episode(episode_seed(index, slot.episodes_begun - 1));
}

EpisodeRestart Rollout::restart_lost_episode(int index, RolloutBatch& batch, const envs::EnvLost& lost) {
  Slot& slot = slots_[index];
  if (!slot.episode_rows.empty()) batch.turns[slot.episode_rows.back()].truncated = true;
  EpisodeRestart restart;
  restart.slot = run_slot(index);
  restart.worker = lost.where();
  restart.reason = lost.what();
  restart.lost_episode_id = slot.episode_id;
  restart.lost_seed = slot.env->episode_seed();
  restart.lost_turns = slot.env->turn();
  begin_episode(index);
  restart.episode_id = slot.episode_id;
  restart.seed = slot.env->episode_seed();
  return restart;
}

uint64_t Rollout::episode_id(int slot, uint64_t k) const { return static_cast<uint64_t>(run_slot(slot)) + run_slots() * k; }

uint64_t Rollout::episode_seed(int slot, uint64_t k) const {
  const uint64_t group = config_.group_size;
  return config_.first_episode_seed + static_cast<uint64_t>(run_slot(slot)) / group + run_slots() / group * k;
}

nlohmann::json Rollout::state() const {
  nlohmann::json slots = nlohmann::json::array();
  for (const Slot& slot : slots_) {
    slots.push_back({{"episodes_begun", slot.episodes_begun}, {"replies", slot.env->episode_replies()}});
  }
  return {{"slots", slots}};
}

void Rollout::restore(const nlohmann::json& state) {
  if (!state.is_object() || !state.contains("slots") || state["slots"].size() != slots_.size()) {
    throw std::invalid_argument("rollout state: expected " + std::to_string(slots_.size()) +
                                " slots (was it saved with another n_env?)");
  }
  for (size_t i = 0; i < slots_.size(); ++i) {
    const nlohmann::json& saved = state["slots"][i];
    Slot& slot = slots_[i];
    slot.episodes_begun = saved.at("episodes_begun").get<uint64_t>();
    if (slot.episodes_begun == 0) throw std::invalid_argument("rollout state: slot " + std::to_string(i) + " began no episode");
    slot.episode_id = episode_id(static_cast<int>(i), slot.episodes_begun - 1);
    slot.episode_rows.clear();
    slot.env->replay(episode_seed(static_cast<int>(i), slot.episodes_begun - 1), saved.at("replies").get<std::vector<std::string>>());
  }
}

agents::AgentPrompt Rollout::prompt_of(int index, std::vector<memory::ChatMessage> messages) const {
  const Slot& slot = slots_[index];
  agents::AgentPrompt prompt;
  prompt.messages = std::move(messages);
  prompt.actions = &slot.env->env().actions();
  prompt.env = &slot.env->env();
  prompt.seed = mix(config_.seed ^ slot.episode_id, static_cast<uint64_t>(slot.env->turn()) + 0x5bd1e995ULL);
  return prompt;
}

RolloutBatch Rollout::collect(int e_len) {
  if (e_len < 0) throw std::invalid_argument("rollout: e_len must be > 0, got " + std::to_string(e_len));
  if (e_len == 0) e_len = config_.e_len;
  const auto start = std::chrono::steady_clock::now();
  const int n = config_.n_env;
  RolloutBatch batch;
  batch.n_env = n;
  batch.e_len = e_len;
  batch.turns.resize(static_cast<size_t>(n) * e_len);
  batch.bootstrap.resize(n);
  const size_t batch_size = config_.batch_size > 0 ? config_.batch_size : static_cast<size_t>((n + 1) / 2);
  for (Slot& slot : slots_) slot.episode_rows.clear();  // rows of the previous collection
  ProgressLine progress("collect", 0, batch.turns.size());
  {
    ReplyDispatcher replies(agent_, batch_size, config_.lock_step, static_cast<size_t>(n));
    run_slot_fibers(
        static_cast<size_t>(n),
        [&](size_t slot, const std::function<bool()>& stopping) {
          play_slot(static_cast<int>(slot), e_len, batch, replies, progress, stopping);
          replies.leave();
        },
        config_.progress_s, [&] { progress.report(); });
    batch.agent_seconds = replies.stats().agent_seconds;
    batch.agent_batches = replies.stats().batches;
  }
  batch.seconds = seconds_since(start);
  return batch;
}

void Rollout::play_slot(int index, int e_len, RolloutBatch& batch, ReplyDispatcher& replies, ProgressLine& progress,
                        const std::function<bool()>& stopping) {
  Slot& slot = slots_[index];
  const int n = config_.n_env;
  bool unfinished = true;  // the episode in flight after the slot's last turn
  for (int t = 0; t < e_len && !stopping();) {
    auto timer = std::chrono::steady_clock::now();
    agents::AgentPrompt prompt = prompt_of(index, slot.env->prompt(count_));
    batch.prompt_seconds += seconds_since(timer);
    agents::AgentResult result = replies.ask(std::move(prompt));
    timer = std::chrono::steady_clock::now();
    const size_t row = static_cast<size_t>(t) * n + index;
    TurnRecord& record = batch.turns[row];
    record.slot = run_slot(index);
    record.episode_id = slot.episode_id;
    record.turn_index = slot.env->turn();
    record.episode_seed = slot.env->episode_seed();
    TurnOutcome outcome;
    try {
      if (config_.record_state_hashes) record.state_hash = slot.env->env().state_hash();
      record.reference_answer = slot.env->env().reference_answer();
      if (result.error) {
        record.agent_error = error_message(result.error);
        spdlog::error("slot {}: agent {} gave no reply ({}); episode {} ends with the default action", index, agent_.name(),
                      record.agent_error, slot.episode_id);
        if (agent_.token_level()) result.reply.prompt_ids = agent_.encode_prompt(slot.env->prompt(count_));
        outcome = slot.env->end_with_default();
      } else {
        outcome = slot.env->apply(result.reply.text);
      }
    } catch (const envs::EnvLost& lost) {
      record = TurnRecord();  // not played: the row takes the new episode's first turn
      batch.restarts.push_back(restart_lost_episode(index, batch, lost));
      continue;
    }
    record_turn(record, std::move(result.reply), outcome);
    slot.episode_rows.push_back(row);
    progress.add_turn();
    unfinished = !outcome.done();
    if (outcome.done()) {
      progress.add_episode();
      end_episode(index, batch, outcome);
    }
    batch.env_seconds += seconds_since(timer);
    if (config_.on_turn_finished) config_.on_turn_finished(row, record);
    ++t;
  }
  if (unfinished && !stopping()) {
    BootstrapPrompt bootstrap;
    bootstrap.episode_id = slot.episode_id;
    bootstrap.messages = slot.env->prompt(count_);
    bootstrap.prompt_ids = agent_.encode_prompt(bootstrap.messages);
    batch.bootstrap[index] = std::move(bootstrap);
  }
}

void Rollout::record_turn(TurnRecord& record, agents::AgentReply&& reply, const TurnOutcome& outcome) {
  record.prompt_ids = std::move(reply.prompt_ids);
  record.response_ids = std::move(reply.response_ids);
  record.logprobs = std::move(reply.logprobs);
  record.response_truncated = reply.truncated;
  record.action_token_start = action_token_start(reply.token_text_ends, outcome.action_begin);
  record.reply = std::move(reply.text);
  record.action = outcome.action;
  record.valid_action = outcome.valid;
  record.reward = outcome.reward;
  record.terminated = outcome.terminated;
  record.truncated = outcome.truncated;
}

void Rollout::end_episode(int index, RolloutBatch& batch, const TurnOutcome& outcome) {
  Slot& slot = slots_[index];
  const EnvSlot& env = *slot.env;
  batch.finished_episodes.push_back(
      {run_slot(index), slot.episode_id, env.episode_seed(), env.turn(), env.episode_return(), env.env().progression(), outcome.terminated,
       outcome.truncated});
  begin_episode(index);
}

}  // namespace turnrl::trainer
