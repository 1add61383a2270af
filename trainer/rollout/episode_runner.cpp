#include "trainer/rollout/episode_runner.h"

#include <optional>
#include <stdexcept>

#include "trainer/rollout/batch_scheduler.h"

namespace turnrl::trainer {

void run_episodes(const std::vector<EpisodeJob>& jobs,
                  const std::function<std::unique_ptr<envs::Env>(const std::string& env_id)>& make_env,
                  agents::Agent& agent, const EpisodeRunnerConfig& config,
                  const std::function<void(EpisodeLog&&)>& on_finished) {
  if (config.parallel_episodes <= 0) throw std::invalid_argument("parallel_episodes must be > 0");
  struct Running {
    std::unique_ptr<EnvSlot> env;
    EpisodeLog log;
  };
  const memory::TokenCounter count = agent.token_counter();
  std::vector<std::optional<Running>> slots(static_cast<size_t>(config.parallel_episodes));
  BatchScheduler scheduler(agent, config.batch_size, config.pipelined);
  size_t next_job = 0;

  auto submit = [&](size_t index) {
    Running& running = *slots[index];
    agents::AgentPrompt prompt;
    prompt.messages = running.env->prompt(count);
    prompt.actions = &running.env->env().actions();
    prompt.seed = episode_turn_seed(running.log.job.seed, running.env->turn());
    running.log.turns.push_back({prompt.messages, "", "", false, 0.0});
    scheduler.submit(index, std::move(prompt));
  };
  auto start_next = [&](size_t index) {
    slots[index].reset();
    if (next_job >= jobs.size()) return;
    const EpisodeJob& job = jobs[next_job++];
    Running running{std::make_unique<EnvSlot>(make_env(job.env_id), config.turn, episode_choice_seed(job.seed), agent.max_prompt_tokens()), {}};
    running.log.job = job;
    running.env->begin_episode(job.seed);
    slots[index] = std::move(running);
    submit(index);
  };

  for (size_t i = 0; i < slots.size(); ++i) start_next(i);
  while (!scheduler.idle()) {
    for (auto& [index, reply] : scheduler.next_replies()) {
      Running& running = *slots[index];
      const TurnOutcome outcome = running.env->apply(reply.text);
      TurnLog& turn = running.log.turns.back();
      turn.reply = std::move(reply.text);
      turn.action = running.env->env().actions()[outcome.action].name;
      turn.valid = outcome.valid;
      turn.reward = outcome.reward;
      if (!outcome.done()) {
        submit(index);
        continue;
      }
      running.log.episode_return = running.env->episode_return();
      running.log.progression = running.env->env().progression();
      running.log.achievements = running.env->env().unlocked_achievements();
      running.log.terminated = outcome.terminated;
      running.log.truncated = outcome.truncated;
      on_finished(std::move(running.log));
      start_next(index);
    }
  }
}

}  // namespace turnrl::trainer
