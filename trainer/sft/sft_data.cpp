#include "trainer/sft/sft_data.h"

#include <fstream>
#include <map>
#include <mutex>
#include <optional>
#include <random>
#include <stdexcept>

#include "agents/expert_agent.h"
#include "agents/random_agent.h"
#include "agents/reply_template.h"
#include "envs/expert.h"
#include "envs/registry.h"
#include "trainer/rollout/episode_runner.h"

namespace turnrl::trainer {
namespace {

std::unique_ptr<agents::Agent> make_player(const SftDataSpec& spec) {
  if (spec.policy == FormatPolicy::kRandom) return std::make_unique<agents::RandomAgent>(spec.reply_template, spec.keyed_share);
  return std::make_unique<agents::ExpertAgent>(spec.reply_template, spec.expert_sight);
}

/** Whether the expert's action gives way to a random one at this turn (spec.expert_noise): a
 *  function of the turn's request seed, so the writer knows the turn without the agent telling it. */
bool off_expert_turn(const SftDataSpec& spec, uint64_t request_seed) {
  if (spec.policy != FormatPolicy::kExpert || spec.expert_noise <= 0.0) return false;
  std::mt19937_64 rng(request_seed ^ 0x6e6f697365ULL);
  return std::uniform_real_distribution<double>(0.0, 1.0)(rng) < spec.expert_noise;
}

/** The random or expert template agent with the model's token counting, so prompts are cut as the
 *  model's; with expert noise, the off-expert turns are the random agent's. */
class TemplateAgent final : public agents::Agent {
 public:
  TemplateAgent(const SftDataSpec& spec)
      : spec_(spec), player_(make_player(spec)), random_(spec.reply_template), count_(spec.token_counter), limit_(spec.max_prompt_tokens) {}
  std::string name() const override { return "template"; }
  std::vector<agents::AgentReply> act(const std::vector<agents::AgentPrompt>& prompts) override {
    std::vector<agents::AgentReply> replies = player_->act(prompts);
    for (size_t i = 0; i < prompts.size(); ++i) {
      if (off_expert_turn(spec_, prompts[i].seed)) replies[i] = std::move(random_.act({prompts[i]}).front());
    }
    return replies;
  }
  memory::TokenCounter token_counter() const override { return count_; }
  size_t max_prompt_tokens() const override { return limit_; }

 private:
  const SftDataSpec& spec_;
  std::unique_ptr<agents::Agent> player_;
  agents::RandomAgent random_;
  memory::TokenCounter count_;
  size_t limit_;
};

/** DAgger's player: the learner acts; the expert's reply for each prompt's state is kept for the
 *  writer, keyed by the request seed (the episode's and the turn's, episode_turn_seed); none where
 *  the expert could only guess (envs::ExpertMove::guess), since a random label teaches nothing. */
class LabellingAgent final : public agents::Agent {
 public:
  LabellingAgent(agents::Agent& learner, const std::string& reply_template, envs::ExpertSight sight)
      : learner_(learner), expert_(reply_template, sight) {}
  std::string name() const override { return "dagger(" + learner_.name() + ")"; }
  std::vector<agents::AgentReply> act(const std::vector<agents::AgentPrompt>& prompts) override {
    for (const agents::AgentPrompt& prompt : prompts) {
      agents::ExpertAgent::Label label = expert_.label(prompt);
      std::lock_guard lock(mutex_);
      labels_[prompt.seed] = label.guess ? std::nullopt : std::optional<std::string>(std::move(label.text));
    }
    return learner_.act(prompts);
  }
  std::optional<std::string> take_label(uint64_t request_seed) {
    std::lock_guard lock(mutex_);
    const auto it = labels_.find(request_seed);
    if (it == labels_.end()) throw std::logic_error("format data: no expert label for request seed " + std::to_string(request_seed));
    std::optional<std::string> label = std::move(it->second);
    labels_.erase(it);
    return label;
  }
  memory::TokenCounter token_counter() const override { return learner_.token_counter(); }
  size_t max_prompt_tokens() const override { return learner_.max_prompt_tokens(); }

 private:
  agents::Agent& learner_;
  agents::ExpertAgent expert_;
  std::mutex mutex_;
  std::map<uint64_t, std::optional<std::string>> labels_;
};

}  // namespace

SftDataCounts write_sft_data(const SftDataSpec& spec, const std::string& path, agents::Agent* learner) {
  if (spec.tasks.empty() || spec.episodes <= 0) throw std::invalid_argument("format data: no tasks or no episodes");
  if (spec.ranks < 1 || spec.rank < 0 || spec.rank >= spec.ranks) throw std::invalid_argument("format data: rank outside [0, ranks)");
  if (!(spec.expert_noise >= 0.0 && spec.expert_noise < 1.0)) throw std::invalid_argument("format data: expert noise must be in [0, 1)");
  if (!(spec.min_progression >= 0.0 && spec.min_progression <= 1.0)) throw std::invalid_argument("format data: min progression must be in [0, 1]");
  if (learner && (spec.policy != FormatPolicy::kExpert || spec.expert_noise > 0.0)) {
    throw std::invalid_argument("format data: a learner's turns are labelled by the expert: policy must be expert, without noise");
  }
  if (agents::asks_for_aim(spec.reply_template) && spec.policy != FormatPolicy::kExpert) {
    throw std::invalid_argument("format data: a reply template's {aim} needs policy expert (the expert's aim)");
  }
  if (spec.policy == FormatPolicy::kExpert) {
    for (const std::string& task : spec.tasks) {
      if (!envs::has_expert(*envs::make_env(task, spec.env_options), spec.expert_sight)) {
        throw std::invalid_argument("format data: policy expert, but " + task + " has no scripted expert with sight " +
                                    enum_name(spec.expert_sight));
      }
    }
  }
  std::vector<EpisodeJob> jobs;
  for (int i = spec.rank; i < spec.episodes; i += spec.ranks) {
    jobs.push_back({spec.tasks[static_cast<size_t>(i) % spec.tasks.size()], spec.first_seed + static_cast<uint64_t>(i), static_cast<size_t>(i)});
  }
  std::ofstream out(path, std::ios::trunc | std::ios::binary);
  if (!out) throw std::runtime_error("cannot write " + path);
  TemplateAgent template_agent(spec);
  std::optional<LabellingAgent> labelling;
  if (learner) labelling.emplace(*learner, spec.reply_template, spec.expert_sight);
  agents::Agent& agent = labelling ? static_cast<agents::Agent&>(*labelling) : template_agent;
  EpisodeRunnerConfig runner;
  runner.parallel_episodes = 64;
  runner.turn = spec.turn;
  runner.progress_s = 10.0;  // a learner's episodes take minutes
  runner.progress_label = labelling ? "format episodes (learner plays, expert labels)" : "format episodes";
  SftDataCounts counts;
  run_episodes(
      jobs, [&](const std::string& id) { return envs::make_env(id, spec.env_options); }, agent, runner, [&](EpisodeLog&& log) {
        counts.turns += log.turns.size();
        counts.progression_sum += log.progression;
        if (!labelling && log.progression < spec.min_progression) return;
        ++counts.episodes_written;
        for (size_t t = 0; t < log.turns.size(); ++t) {
          const TurnLog& turn = log.turns[t];
          const uint64_t request_seed = episode_turn_seed(log.job.seed, static_cast<int>(t));
          const std::optional<std::string> reply = labelling ? labelling->take_label(request_seed) : turn.reply;
          if (!reply) {
            ++counts.guesses;
            continue;
          }
          if (off_expert_turn(spec, request_seed)) continue;  // no demonstration
          nlohmann::json messages = nlohmann::json::array();
          for (const auto& message : turn.prompt) {
            messages.push_back({{"role", message.role}, {"content", message.content}});
            if (message.role == "assistant") messages.back()["weight"] = 0;  // a past turn: context, not a target
          }
          messages.push_back({{"role", "assistant"}, {"content", *reply}});
          out << nlohmann::json{{"messages", std::move(messages)}}.dump() << "\n";
          ++counts.transcripts;
        }
      });
  if (!out.flush()) throw std::runtime_error("write error on " + path);
  return counts;
}

}  // namespace turnrl::trainer
