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

envs::ReplyFormat reply_format(const TrainConfig& config) {
  return config.env.reply_format == "balrog" ? envs::ReplyFormat::kBalrogNaive : envs::ReplyFormat::kActionTag;
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

std::vector<int32_t> Actor::prompt_ids(const memory::History& history) const {
  const auto count = [this](const std::vector<memory::ChatMessage>& messages) {
    return tokenizer_.encode_chat(messages, true).size();
  };
  return tokenizer_.encode_chat(history.messages(count), true);
}

memory::History Actor::make_history() const {
  memory::HistoryConfig history;
  history.max_turns = config_.env.history;
  history.token_budget = static_cast<size_t>(config_.env.prompt_budget);
  if (config_.env.prompt_format == "verlog") {
    history.layout = memory::PromptLayout::kVerlog;
    history.suffix = memory::verlog_format_instruction();
  } else if (config_.env.prompt_format == "compact") {
    history.suffix.clear();  // the goal line stands in for the instruction; no suffix
  }
  return memory::History(history);
}

std::string Actor::instruction(const envs::Env& env) const {
  return config_.env.prompt_format == "compact" ? env.goal() : env.instruction_prompt();
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
      generation_seed_(seed * 7919 + 1),
      parse_rng_(seed) {
  for (int i = 0; i < config.env.n_env; ++i) {
    const std::string& task = config.env.ids[static_cast<size_t>(i) % config.env.ids.size()];
    slots_.emplace_back(envs::make_env(task, config.env.options), actor_.make_history());
  }
}

void PpoCollector::start_episode(Slot& slot, uint64_t seed) {
  slot.seed = seed;
  slot.steps.clear();
  slot.env->reset(seed);
  slot.history.reset(actor_.instruction(*slot.env));
  slot.history.add_observation(slot.env->observe_text());
  slot.needs_reset = false;
}

envs::StepResult PpoCollector::take_step(Slot& slot, const Step& step) {
  const envs::StepResult result = slot.env->step(step.action);
  slot.steps.push_back(step);
  const bool done = result.terminated || result.truncated || static_cast<int>(slot.steps.size()) >= slot.env->max_steps();
  const std::string& executed = slot.env->actions()[step.action].name;
  slot.history.add_reply(config_.env.history_entry == "raw" ? step.reply : executed, executed);
  if (done) {
    slot.needs_reset = true;
    return result;
  }
  slot.history.set_instruction(actor_.instruction(*slot.env));  // Crafter's changes as achievements unlock
  envs::TextObservation observation = slot.env->observe_text();
  if (!step.valid && config_.env.prompt_format == "balrog") {
    observation.long_term = envs::invalid_action_feedback(executed) + observation.long_term;
  }
  slot.history.add_observation(observation);
  return result;
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
      if (slot.needs_reset) {
        start_episode(slot, next_seed_++);
        slot.stats = EpisodeStats{next_episode_++, 0.0, 0, 0.0, 0};
      }
      prompts[s] = actor_.prompt_ids(slot.history);
    }
    const auto generations = agents::generate_tokens(policy, prompts, actor_.sampling(false, generation_seed_++),
                                                     tokenizer_.pad_id(), tokenizer_.stop_ids());
    for (size_t s = 0; s < slots_.size(); ++s) {
      Slot& slot = slots_[s];
      Turn turn;
      turn.slot = static_cast<int>(s);
      turn.episode = slot.stats.episode;
      turn.index = slot.stats.length;
      turn.prompt_ids = prompts[s];
      turn.response_ids = generations[s].ids;
      turn.sample_logprobs = generations[s].logprobs;
      turn.reply = actor_.reply_text(turn.response_ids);
      turn.action_token_start = actor_.action_token_start(turn.response_ids);
      const envs::ParsedAction parsed = envs::parse_action(turn.reply, *slot.env, reply_format(config_), parse_rng_);
      const envs::StepResult result = take_step(slot, {parsed.action, parsed.valid, turn.reply});
      double reward = result.reward;
      if (config_.env.binary_reward && reward > 0) reward = 1.0;
      if (!parsed.valid) reward = config_.env.invalid_penalty;  // replaces the step's reward, as Verlog does
      turn.reward = reward;
      turn.invalid = !parsed.valid;
      ++slot.stats.length;
      turn.terminated = result.terminated;
      turn.truncated = slot.needs_reset && !result.terminated;
      slot.stats.total_reward += reward;
      slot.stats.invalid_turns += !parsed.valid;
      if (turn.done()) {
        slot.stats.progression = slot.env->progression();
        finished.push_back(slot.stats);
      }
      batch.turns.push_back(std::move(turn));
    }
  }
  batch.bootstrap_prompts.resize(slots_.size());
  for (size_t s = 0; s < slots_.size(); ++s) {
    if (!slots_[s].needs_reset) batch.bootstrap_prompts[s] = actor_.prompt_ids(slots_[s].history);
  }
  return batch;
}

nlohmann::json PpoCollector::state() const {
  std::ostringstream parse_rng;
  parse_rng << parse_rng_;
  nlohmann::json slots = nlohmann::json::array();
  for (const Slot& slot : slots_) {
    nlohmann::json steps = nlohmann::json::array();
    for (const Step& step : slot.steps) steps.push_back({step.action, step.valid, step.reply});
    slots.push_back({{"needs_reset", slot.needs_reset},
                     {"seed", slot.seed},
                     {"episode", slot.stats.episode},
                     {"total_reward", slot.stats.total_reward},
                     {"invalid_turns", slot.stats.invalid_turns},
                     {"steps", steps}});
  }
  return {{"next_seed", next_seed_},
          {"next_episode", next_episode_},
          {"generation_seed", generation_seed_},
          {"parse_rng", parse_rng.str()},
          {"slots", slots}};
}

void PpoCollector::restore(const nlohmann::json& state) {
  if (!state.is_object() || !state.contains("slots") || state["slots"].size() != slots_.size()) {
    throw std::invalid_argument("collector state: expected " + std::to_string(slots_.size()) +
                                " slots (was the checkpoint written with another env.n_env?)");
  }
  next_seed_ = state.at("next_seed").get<uint64_t>();
  next_episode_ = state.at("next_episode").get<int64_t>();
  generation_seed_ = state.at("generation_seed").get<uint64_t>();
  std::istringstream(state.at("parse_rng").get<std::string>()) >> parse_rng_;
  for (size_t s = 0; s < slots_.size(); ++s) {
    const nlohmann::json& saved = state["slots"][s];
    Slot& slot = slots_[s];
    slot.needs_reset = saved.at("needs_reset").get<bool>();
    slot.steps.clear();
    if (slot.needs_reset) continue;
    start_episode(slot, saved.at("seed").get<uint64_t>());
    for (const auto& step : saved.at("steps")) {
      take_step(slot, {step.at(0).get<int>(), step.at(1).get<bool>(), step.at(2).get<std::string>()});
      if (slot.needs_reset) throw std::invalid_argument("collector state: slot " + std::to_string(s) + " replays past its episode's end");
    }
    slot.stats = EpisodeStats{saved.at("episode").get<int64_t>(), saved.at("total_reward").get<double>(),
                              static_cast<int>(slot.steps.size()), 0.0, saved.at("invalid_turns").get<int>()};
  }
}

std::vector<EvalResult> evaluate(const TrainConfig& config, const agents::Tokenizer& tokenizer,
                                 agents::Qwen2Model& policy, uint64_t first_seed, int episodes, bool greedy) {
  const size_t tasks = config.env.ids.size();
  std::vector<EvalResult> results(tasks);
  for (size_t k = 0; k < tasks; ++k) results[k].task = config.env.ids[k];
  if (episodes <= 0) return results;
  // Row k * episodes + i: episode i of task k.
  std::vector<std::unique_ptr<envs::Env>> envs;
  for (size_t k = 0; k < tasks; ++k) {
    for (int i = 0; i < episodes; ++i) {
      envs.push_back(envs::make_env(config.env.ids[k], config.env.options));
      envs.back()->reset(first_seed + i);
    }
  }
  const Actor actor(config, tokenizer, one_env_per_task(config));
  const size_t rows = envs.size();
  std::vector<memory::History> histories;
  for (size_t i = 0; i < rows; ++i) {
    histories.push_back(actor.make_history());
    histories.back().reset(actor.instruction(*envs[i]));
    histories.back().add_observation(envs[i]->observe_text());
  }
  std::vector<bool> running(rows, true);
  std::vector<int> lengths(rows, 0);
  std::vector<double> rewards(rows, 0.0);
  std::mt19937_64 parse_rng(first_seed);
  for (uint64_t step = 0;; ++step) {
    std::vector<size_t> active;
    std::vector<std::vector<int32_t>> prompts;
    for (size_t i = 0; i < rows; ++i) {
      if (!running[i]) continue;
      active.push_back(i);
      prompts.push_back(actor.prompt_ids(histories[i]));
    }
    if (active.empty()) break;
    const auto generations =
        agents::generate_tokens(policy, prompts, actor.sampling(greedy, first_seed + step), tokenizer.pad_id(), tokenizer.stop_ids());
    for (size_t a = 0; a < active.size(); ++a) {
      const size_t i = active[a];
      const std::string reply = actor.reply_text(generations[a].ids);
      const envs::ParsedAction parsed = envs::parse_action(reply, *envs[i], reply_format(config), parse_rng);
      const envs::StepResult step_result = envs[i]->step(parsed.action);
      rewards[i] += step_result.reward;
      ++lengths[i];
      if (step_result.terminated || step_result.truncated || lengths[i] >= envs[i]->max_steps()) {
        running[i] = false;
        continue;
      }
      const std::string& executed = envs[i]->actions()[parsed.action].name;
      histories[i].add_reply(config.env.history_entry == "raw" ? reply : executed, executed);
      histories[i].add_observation(envs[i]->observe_text());
    }
  }
  for (size_t i = 0; i < rows; ++i) {
    EvalResult& result = results[i / static_cast<size_t>(episodes)];
    result.success += envs[i]->progression() / episodes;
    result.mean_reward += rewards[i] / episodes;
    result.mean_length += static_cast<double>(lengths[i]) / episodes;
  }
  return results;
}

}  // namespace turnrl::trainer
