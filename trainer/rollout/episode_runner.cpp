#include "trainer/rollout/episode_runner.h"

#include <optional>
#include <stdexcept>

#include <spdlog/spdlog.h>

#include "trainer/rollout/progress_line.h"
#include "trainer/rollout/reply_dispatcher.h"
#include "trainer/rollout/slot_fibers.h"

namespace turnrl::trainer {

void run_episodes(const std::vector<EpisodeJob>& jobs,
                  const std::function<std::unique_ptr<envs::Env>(const std::string& env_id)>& make_env,
                  agents::Agent& agent, const EpisodeRunnerConfig& config,
                  const std::function<void(EpisodeLog&&)>& on_finished) {
  if (config.parallel_episodes <= 0) throw std::invalid_argument("parallel_episodes must be > 0");
  const memory::TokenCounter count = agent.token_counter();
  const size_t slots = std::min(jobs.size(), static_cast<size_t>(config.parallel_episodes));
  if (slots == 0) return;
  ProgressLine progress(config.progress_label, jobs.size());
  ReplyDispatcher replies(agent, config.batch_size, config.lock_step, slots);
  size_t next_job = 0;
  // Each slot plays whole episodes, taking the next job as it ends one.
  auto play = [&](size_t, const std::function<bool()>& stopping) {
    while (next_job < jobs.size() && !stopping()) {
      EpisodeLog log;
      log.job = jobs[next_job++];
      EnvSlot env(make_env(log.job.env_id), config.turn, episode_choice_seed(log.job.seed), agent.max_prompt_tokens());
      env.begin_episode(log.job.seed);
      TurnOutcome outcome;
      while (!outcome.done() && !stopping()) {
        agents::AgentPrompt prompt;
        prompt.messages = env.prompt(count);
        prompt.actions = &env.env().actions();
        prompt.env = &env.env();
        prompt.seed = episode_turn_seed(log.job.seed, env.turn());
        TurnLog& turn = log.turns.emplace_back();
        turn.prompt = prompt.messages;
        agents::AgentResult result = replies.ask(std::move(prompt));
        if (result.error) {
          turn.error = error_message(result.error);
          spdlog::error("{} episode of seed {}: agent {} gave no reply ({}); the episode ends with the default action",
                        log.job.env_id, log.job.seed, agent.name(), turn.error);
          outcome = env.end_with_default();
        } else {
          outcome = env.apply(result.reply.text);
          turn.reply = std::move(result.reply.text);
          turn.prompt_tokens = result.reply.prompt_tokens;
          turn.completion_tokens = result.reply.completion_tokens;
        }
        turn.action = env.env().actions()[outcome.action].name;
        turn.valid = outcome.valid;
        turn.reward = outcome.reward;
        progress.add_turn();
      }
      if (!outcome.done()) return;  // stopping
      log.episode_return = env.episode_return();
      log.progression = env.env().progression();
      log.achievements = env.env().unlocked_achievements();
      log.terminated = outcome.terminated;
      log.truncated = outcome.truncated;
      progress.add_episode();
      on_finished(std::move(log));
    }
  };
  run_slot_fibers(
      slots,
      [&](size_t slot, const std::function<bool()>& stopping) {
        play(slot, stopping);
        replies.leave();
      },
      config.progress_s, [&] { progress.report(); });
  if (config.progress_s > 0) progress.report();
}

}  // namespace turnrl::trainer
