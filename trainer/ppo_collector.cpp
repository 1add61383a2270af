#include "trainer/ppo_collector.h"

#include <algorithm>
#include <sstream>
#include <stdexcept>

#include "agents/generation.h"
#include "envs/registry.h"

namespace turnrl::trainer {
namespace {

std::vector<std::unique_ptr<envs::Env>> one_env_per_task(const TrainConfig& config) {
  std::vector<std::unique_ptr<envs::Env>> envs;
  for (const std::string& id : config.env.ids) envs.push_back(envs::make_env(id, config.env.options));
  return envs;
}

}  // namespace

Actor::Actor(const TrainConfig& config, const agents::Tokenizer& tokenizer,
             const std::vector<std::unique_ptr<envs::Env>>& task_envs)
    : config_(config), tokenizer_(tokenizer) {
  if (!config.sampling.action_tokens_only) return;
  // Each action as one token where the vocabulary has it ("turn_left"), else the tokens of its name.
  for (const auto& env : task_envs) {
    for (const auto& action : env->actions()) {
      std::string joined = action.name;
      std::replace(joined.begin(), joined.end(), ' ', '_');
      const int32_t single = tokenizer.token_id(joined);
      const std::vector<int32_t> ids = single >= 0 ? std::vector<int32_t>{single} : tokenizer.encode(action.name);
      allowed_tokens_.insert(allowed_tokens_.end(), ids.begin(), ids.end());
    }
  }
  if (config.sampling.max_response_tokens > 1) {
    allowed_tokens_.insert(allowed_tokens_.end(), tokenizer.stop_ids().begin(), tokenizer.stop_ids().end());
  }
  std::sort(allowed_tokens_.begin(), allowed_tokens_.end());
  allowed_tokens_.erase(std::unique(allowed_tokens_.begin(), allowed_tokens_.end()), allowed_tokens_.end());
}

agents::SamplingParams Actor::sampling(bool greedy, uint64_t seed) const {
  agents::SamplingParams params;
  params.temperature = static_cast<float>(config_.sampling.temperature);
  params.top_p = static_cast<float>(config_.sampling.top_p);
  params.max_new_tokens = config_.sampling.max_response_tokens;
  params.greedy = greedy;
  params.seed = seed;
  params.allowed_tokens = allowed_tokens_;
  return params;
}

std::vector<int32_t> Actor::prompt_ids(const EnvSlot& slot) const {
  const auto count = [this](const std::vector<memory::ChatMessage>& messages) {
    return tokenizer_.encode_chat(messages, true).size();
  };
  return tokenizer_.encode_chat(slot.prompt(count), true);
}

std::unique_ptr<EnvSlot> Actor::make_slot(std::unique_ptr<envs::Env> env, uint64_t rng_seed) const {
  memory::HistoryConfig history;
  history.max_turns = config_.env.history;
  history.token_budget = static_cast<size_t>(config_.env.prompt_budget);
  ActionConfig actions;
  actions.reply_format = config_.env.reply_format == "balrog" ? envs::ReplyFormat::kBalrogNaive : envs::ReplyFormat::kActionTag;
  actions.invalid_action_penalty = config_.env.invalid_penalty;
  actions.history_entry = config_.env.history_entry == "raw" ? HistoryEntry::kRawReply : HistoryEntry::kExecutedAction;
  actions.binary_reward = config_.env.binary_reward;
  if (config_.env.prompt_format == "verlog") {
    history.layout = memory::PromptLayout::kVerlog;
    history.suffix = memory::verlog_format_instruction();
  } else if (config_.env.prompt_format == "compact") {
    history.suffix.clear();
    actions.goal_as_instruction = true;
  } else {
    actions.feedback_on_invalid_action = true;  // BALROG's note in the next observation
  }
  return std::make_unique<EnvSlot>(std::move(env), history, actions, rng_seed);
}

std::string Actor::reply_text(const std::vector<int32_t>& ids) const {
  std::vector<int32_t> text_ids = ids;
  const auto& stops = tokenizer_.stop_ids();
  if (!text_ids.empty() && std::find(stops.begin(), stops.end(), text_ids.back()) != stops.end()) text_ids.pop_back();
  return tokenizer_.decode(text_ids);
}

int Actor::action_token_start(const std::vector<int32_t>& ids) const {
  if (config_.sampling.action_tokens_only) return 0;
  agents::StreamingDecoder decoder(tokenizer_);
  std::string text;
  std::vector<size_t> text_end(ids.size());  // length of the text once token k is decoded
  for (size_t k = 0; k < ids.size(); ++k) {
    text += decoder.push(ids[k]);
    text_end[k] = text.size();
  }
  constexpr std::string_view kMarker = "ACTION:";
  const size_t marker = text.rfind(kMarker);
  if (marker == std::string::npos) return static_cast<int>(ids.size());
  const size_t action_begin = marker + kMarker.size();
  const auto first = std::upper_bound(text_end.begin(), text_end.end(), action_begin);
  return static_cast<int>(first - text_end.begin());
}

PpoCollector::PpoCollector(const TrainConfig& config, const agents::Tokenizer& tokenizer, uint64_t seed)
    : config_(config),
      tokenizer_(tokenizer),
      actor_(config, tokenizer, one_env_per_task(config)),
      next_seed_(config.run.train_seed + seed * 10'000'000ULL),
      generation_seed_(seed * 7919 + 1) {
  for (int i = 0; i < config.env.n_env; ++i) {
    const std::string& task = config.env.ids[static_cast<size_t>(i) % config.env.ids.size()];
    slots_.push_back({actor_.make_slot(envs::make_env(task, config.env.options), seed * 1'000'003ULL + i), {}});
  }
}

TurnBatch PpoCollector::collect(agents::Qwen2Model& policy, int e_len, std::vector<EpisodeStats>& finished) {
  TurnBatch batch;
  batch.n_env = static_cast<int>(slots_.size());
  batch.e_len = e_len;
  batch.turns.reserve(static_cast<size_t>(e_len) * slots_.size());
  std::vector<std::vector<int32_t>> prompts(slots_.size());
  for (int t = 0; t < e_len; ++t) {
    for (size_t s = 0; s < slots_.size(); ++s) {
      Slot& slot = slots_[s];
      if (slot.env->done()) {
        slot.env->begin_episode(next_seed_++);
        slot.stats = EpisodeStats{next_episode_++, 0.0, 0, 0.0, 0};
      }
      prompts[s] = actor_.prompt_ids(*slot.env);
    }
    const auto generations = agents::generate_tokens(policy, prompts, actor_.sampling(false, generation_seed_++),
                                                     tokenizer_.pad_id(), tokenizer_.stop_ids());
    for (size_t s = 0; s < slots_.size(); ++s) {
      Slot& slot = slots_[s];
      Turn turn;
      turn.slot = static_cast<int>(s);
      turn.episode = slot.stats.episode;
      turn.index = slot.env->turn();
      turn.prompt_ids = prompts[s];
      turn.response_ids = generations[s].ids;
      turn.sample_logprobs = generations[s].logprobs;
      turn.reply = actor_.reply_text(turn.response_ids);
      turn.action_token_start = actor_.action_token_start(turn.response_ids);
      const TurnOutcome outcome = slot.env->apply(turn.reply);
      turn.reward = outcome.reward;  // the invalid-action penalty replaces the step's reward, as Verlog does
      turn.invalid = !outcome.valid;
      turn.terminated = outcome.terminated;
      turn.truncated = outcome.truncated;
      slot.stats.length = slot.env->turn();
      slot.stats.total_reward = slot.env->episode_return();
      slot.stats.invalid_turns += !outcome.valid;
      if (outcome.done()) {
        slot.stats.progression = slot.env->env().progression();
        finished.push_back(slot.stats);
      }
      batch.turns.push_back(std::move(turn));
    }
  }
  batch.bootstrap_prompts.resize(slots_.size());
  for (size_t s = 0; s < slots_.size(); ++s) {
    if (!slots_[s].env->done()) batch.bootstrap_prompts[s] = actor_.prompt_ids(*slots_[s].env);
  }
  return batch;
}

nlohmann::json PpoCollector::state() const {
  nlohmann::json slots = nlohmann::json::array();
  for (const Slot& slot : slots_) {
    slots.push_back({{"in_flight", !slot.env->done()},
                     {"seed", slot.env->episode_seed()},
                     {"episode", slot.stats.episode},
                     {"invalid_turns", slot.stats.invalid_turns},
                     {"replies", slot.env->episode_replies()}});
  }
  return {{"next_seed", next_seed_}, {"next_episode", next_episode_}, {"generation_seed", generation_seed_}, {"slots", slots}};
}

void PpoCollector::restore(const nlohmann::json& state) {
  if (!state.is_object() || !state.contains("slots") || state["slots"].size() != slots_.size()) {
    throw std::invalid_argument("collector state: expected " + std::to_string(slots_.size()) +
                                " slots (was the checkpoint written with another env.n_env?)");
  }
  next_seed_ = state.at("next_seed").get<uint64_t>();
  next_episode_ = state.at("next_episode").get<int64_t>();
  generation_seed_ = state.at("generation_seed").get<uint64_t>();
  for (size_t s = 0; s < slots_.size(); ++s) {
    const nlohmann::json& saved = state["slots"][s];
    if (!saved.at("in_flight").get<bool>()) continue;
    Slot& slot = slots_[s];
    slot.env->replay(saved.at("seed").get<uint64_t>(), saved.at("replies").get<std::vector<std::string>>());
    slot.stats = EpisodeStats{saved.at("episode").get<int64_t>(), slot.env->episode_return(), slot.env->turn(), 0.0,
                              saved.at("invalid_turns").get<int>()};
  }
}

std::vector<EvalResult> evaluate(const TrainConfig& config, const agents::Tokenizer& tokenizer,
                                 agents::Qwen2Model& policy, uint64_t first_seed, int episodes, bool greedy) {
  const size_t tasks = config.env.ids.size();
  std::vector<EvalResult> results(tasks);
  for (size_t k = 0; k < tasks; ++k) results[k].task = config.env.ids[k];
  if (episodes <= 0) return results;
  const Actor actor(config, tokenizer, one_env_per_task(config));
  // Row k * episodes + i: episode i of task k.
  std::vector<std::unique_ptr<EnvSlot>> slots;
  for (size_t k = 0; k < tasks; ++k) {
    for (int i = 0; i < episodes; ++i) {
      slots.push_back(actor.make_slot(envs::make_env(config.env.ids[k], config.env.options), first_seed + i));
      slots.back()->begin_episode(first_seed + i);
    }
  }
  std::vector<double> env_rewards(slots.size(), 0.0);
  for (uint64_t step = 0;; ++step) {
    std::vector<size_t> active;
    std::vector<std::vector<int32_t>> prompts;
    for (size_t i = 0; i < slots.size(); ++i) {
      if (slots[i]->done()) continue;
      active.push_back(i);
      prompts.push_back(actor.prompt_ids(*slots[i]));
    }
    if (active.empty()) break;
    const auto generations =
        agents::generate_tokens(policy, prompts, actor.sampling(greedy, first_seed + step), tokenizer.pad_id(), tokenizer.stop_ids());
    for (size_t a = 0; a < active.size(); ++a) {
      env_rewards[active[a]] += slots[active[a]]->apply(actor.reply_text(generations[a].ids)).env_reward;
    }
  }
  for (size_t i = 0; i < slots.size(); ++i) {
    EvalResult& result = results[i / static_cast<size_t>(episodes)];
    result.success += slots[i]->env().progression() / episodes;
    result.mean_reward += env_rewards[i] / episodes;
    result.mean_length += static_cast<double>(slots[i]->turn()) / episodes;
  }
  return results;
}

}  // namespace turnrl::trainer
