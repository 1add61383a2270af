#include "trainer/rollout/sft_data.h"

#include <fstream>
#include <stdexcept>

#include "agents/expert_agent.h"
#include "agents/random_agent.h"
#include "envs/expert.h"
#include "envs/registry.h"
#include "trainer/rollout/episode_runner.h"

namespace turnrl::trainer {
namespace {

std::unique_ptr<agents::Agent> make_player(const SftDataSpec& spec) {
  if (spec.policy == "random") return std::make_unique<agents::RandomAgent>(spec.reply_template, spec.keyed_share);
  if (spec.policy == "expert") return std::make_unique<agents::ExpertAgent>(spec.reply_template);
  throw std::invalid_argument("format data: policy must be random or expert, got '" + spec.policy + "'");
}

/** The random or expert template agent with the model's token counting, so prompts are cut as the model's. */
class TemplateAgent final : public agents::Agent {
 public:
  TemplateAgent(const SftDataSpec& spec) : player_(make_player(spec)), count_(spec.token_counter), limit_(spec.max_prompt_tokens) {}
  std::string name() const override { return "template"; }
  std::vector<agents::AgentReply> act(const std::vector<agents::AgentPrompt>& prompts) override { return player_->act(prompts); }
  memory::TokenCounter token_counter() const override { return count_; }
  size_t max_prompt_tokens() const override { return limit_; }

 private:
  std::unique_ptr<agents::Agent> player_;
  memory::TokenCounter count_;
  size_t limit_;
};

}  // namespace

size_t write_sft_data(const SftDataSpec& spec, const std::string& path) {
  if (spec.tasks.empty() || spec.episodes <= 0) throw std::invalid_argument("format data: no tasks or no episodes");
  if (spec.policy == "expert") {
    for (const std::string& task : spec.tasks) {
      if (!envs::has_expert(*envs::make_env(task, spec.env_options))) throw std::invalid_argument("format data: policy expert, but " + task + " has no scripted expert");
    }
  }
  std::vector<EpisodeJob> jobs;
  for (int i = 0; i < spec.episodes; ++i) {
    jobs.push_back({spec.tasks[static_cast<size_t>(i) % spec.tasks.size()], spec.first_seed + static_cast<uint64_t>(i), static_cast<size_t>(i)});
  }
  std::ofstream out(path, std::ios::trunc | std::ios::binary);
  if (!out) throw std::runtime_error("cannot write " + path);
  TemplateAgent agent(spec);
  EpisodeRunnerConfig runner;
  runner.parallel_episodes = 64;
  runner.turn = spec.turn;
  size_t lines = 0;
  run_episodes(
      jobs, [&](const std::string& id) { return envs::make_env(id, spec.env_options); }, agent, runner, [&](EpisodeLog&& log) {
        for (const TurnLog& turn : log.turns) {
          nlohmann::json messages = nlohmann::json::array();
          for (const auto& message : turn.prompt) messages.push_back({{"role", message.role}, {"content", message.content}});
          messages.push_back({{"role", "assistant"}, {"content", turn.reply}});
          out << nlohmann::json{{"messages", std::move(messages)}}.dump() << "\n";
          ++lines;
        }
      });
  if (!out.flush()) throw std::runtime_error("write error on " + path);
  return lines;
}

}  // namespace turnrl::trainer
