#pragma once
// The training configuration: every key declared once (train_config.cpp: name, member, check, doc;
// trainer/config/config_schema.h), which validates the YAML file through the one config reader
// (`file:line: key: problem`) before any work starts, writes the resolved config and describes it
// (`turnrl config --reference`). Torch-free: play and eval read a run's config.yaml for its turn settings.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "envs/expert.h"
#include "trainer/algo/advantages.h"
#include "trainer/config/config_schema.h"
#include "trainer/rewards/http_scorer.h"
#include "trainer/rewards/process_reward.h"
#include "trainer/rollout/turn_settings.h"
#include "trainer/sft/lr_schedule.h"
#include "trainer/sft/sft_data.h"

namespace turnrl::trainer {

struct TrainConfig {
  struct Model {
    std::string path;            // actor (and critic, reference) initialisation
    std::string preset;          // when set and `path` has no model, `turnrl new-model` it first
    double initializer_range = 0.0;  // of that new model's weights; 0: the preset's (0.02)
    std::string device = "cpu";
    int threads = 2;
  } model;
  /** The format stage (optional, `format:`): supervised fine-tuning of model.path on template
   *  replies of random actions or of the env's scripted expert (trainer/sft/format_stage.*), so a model
   *  that cannot yet write the reply format learns it before PPO (and, from the expert, how to
   *  play). PPO then starts from, and keeps its KL reference at, `model`. */
  struct Format : FormatPlay, FineTuning {
    std::string model;  // the stage's output folder; empty: no stage. A folder that holds a model is reused
    int episodes = 200;  // played on seeds at the top of the training block, never evaluation seeds
    /** The tasks the episodes are spread over, each one of env.id; empty: all of env.id. An
     *  expert's demonstrations can leave out the tasks it solves slowly or not at all. */
    std::vector<std::string> tasks;
    /** The schedule of the stage's last fine-tuning (the last DAgger round's pass, or the
     *  demonstrations' epochs without rounds); unset: `lr_schedule`. Annealing only the last pass
     *  keeps the rounds' models exploring at the full rate (docs/results). */
    std::optional<LrSchedule> final_lr_schedule;
    /** DAgger after the demonstrations (policy expert): each round the stage's model plays
     *  `dagger_episodes` episodes, sampled as in training, the expert labels every state it
     *  reached, and the model fine-tunes on the demonstrations and every round's labels so far
     *  (`dagger_epochs` passes, `lr`, `batch_size`), as DAgger aggregates. Cloning
     *  alone teaches only the expert's states; the learner's own mistakes lead elsewhere. */
    int dagger_rounds = 0;
    int dagger_episodes = 0;
    /** Passes over the aggregate per round: it grows by a round's labels each round, and the
     *  model it continues has already learnt the demonstrations. */
    int dagger_epochs = 1;
  } format;
  /** The model PPO starts from and compares with (KL): the format stage's when declared. */
  const std::string& initial_model() const { return format.model.empty() ? model.path : format.model; }
  struct Env {
    /** One task or a mix (YAML `id`: a string or a list), dealt to the run's slots by task_of_slot(). */
    std::vector<std::string> ids = {"babyai/goto"};
    nlohmann::json options = nlohmann::json::object();
    int n_env = 32;
    int e_len = 16;
    /** Slots per group of episodes sharing a start state (their k-th episodes share the seed);
     *  the group estimators (grpo, token_grpo, rloo, gigpo) need at least 2. Divides n_env. */
    int group_size = 1;
    /** Env servers the rollout slots are spread over (slot i's home: workers[i % count]); empty:
     *  in-process envs. Evaluation always runs in-process. */
    std::vector<std::string> workers;
    double worker_timeout = 10;    // seconds a worker may take to answer before it counts as dead
    double worker_heartbeat = 5;   // seconds between pings of live workers (below the servers' --client-timeout)
                                   // and probes of dead ones
    /** The index in `ids` of the task a run slot plays: whole groups take the tasks in turn. */
    size_t task_of_slot(int run_slot) const { return static_cast<size_t>(run_slot / group_size) % ids.size(); }
  } env;
  /** The turn pipeline's settings (`turn:`), shared with eval and play. */
  TurnSettings turn;
  struct Sampling {
    double temperature = 1.0;
    double top_p = 1.0;
    int max_response_tokens = 1;
    bool action_tokens_only = true;  // constrain decoding to the tokens of the action names
    /** With action_tokens_only: words the policy may emit besides them (a reply format's words),
     *  each one token of the model's vocabulary. */
    std::vector<std::string> extra_tokens;
  } sampling;
  struct Ppo {
    double actor_lr = 3e-4, critic_lr = 1e-3, weight_decay = 0.0;
    double clip = 0.2, dual_clip = 3.0, value_clip = 0.5;
    int epochs = 4, minibatch = 128;
    /** Mini-batches of rows of like length (less padding), run in shuffled order. */
    bool group_by_length = true;
    double grad_clip = 0.5;
    double kl_coef = 0.001, entropy_coef = 0.01;
    /** Weight of a loss term: KL(reference || actor) over the whole vocabulary at every reply
     *  token (trainer/algo/ppo_loss.h). The KL in the reward sees only the sampled reply, so actions
     *  that sit mostly in lost episodes can die out under it; this term keeps what the reference
     *  weights alive. */
    double anchor_kl_coef = 0.0;
    double step_gamma = 0.99, step_lambda = 0.95, token_gamma = 1.0, token_lambda = 1.0;
    Estimator estimator = Estimator::kGae;  // gae (with the critic) | reinforce++ | grpo | token_grpo | rloo | gigpo
    /** GiGPO (trainer/rewards/gigpo.h): omega, the step returns' discount, mean-only normalisation. */
    double gigpo_step_weight = 1.0, gigpo_gamma = 0.95;
    bool gigpo_mean_norm = false;
    double first_token_weight = 3.0;
    int critic_warmup_iterations = 0;
    int critic_warmup_multiplier = 1;
  } ppo;
  /** The reward stage between the rollout and the estimator (trainer/rewards/reward_stage.h). */
  struct Reward {
    enum class Manager { kEnv, kEpisode };  // env: each turn's reward on its last token | episode: the episode's sum on its last
    Manager manager = Manager::kEnv;
    /** Training-free process rewards besides the manager's (YAML `manager: [env or episode, process]`). */
    bool process = false;
    bool normalize_by_length = false;  // episode: divide the sum by the episode's turn count
    /** DAPO's dynamic sampling: collections per update at most (0: off; group estimators only). */
    int dynamic_sampling_tries = 0;
    /** Score each sample as soon as it finishes, while the others generate (false: after the collection). */
    bool streaming = true;
    rewards::ProcessRewardConfig process_rewards;  // `process:`
    HttpScorerConfig scorer;                        // `scorer:` (an empty url: none)
  } reward;
  struct Run {
    int iterations = 100;
    double minutes = 0;  // PPO's wall-clock limit; 0 = none
    /** The whole run's wall-clock limit, format stage included: PPO stops where its next iteration
     *  and the closing evaluation would overrun it; 0 = none. */
    double total_minutes = 0;
    uint64_t seed = 0;
    std::string out = "runs/train";
    int checkpoint_every = 10;
    int eval_every = 10;
    int eval_episodes = 200;
    uint64_t eval_seed = 100000;
    /** How evaluations decode: greedy, or sampled with `sampling:` seeded by `seed` (BALROG's
     *  default decoding is temperature 1.0); `eval --run --sampled` replays the latter exactly. */
    enum class Decoding { kGreedy, kSampled };
    Decoding eval_decoding = Decoding::kGreedy;
    /** Whether RUN/model is the evaluated actor of highest progression (kept in RUN/best/ as the run
     *  goes) rather than the last; the evaluation seeds then select it, so score it on others. */
    bool keep_best = false;
    /** The final evaluation (metrics type "final") scores the run's model once more at the end on
     *  `final_episodes()` seeds per task from here: with keep_best, seeds that took no part in
     *  choosing it. */
    uint64_t final_eval_seed = 200000;
    /** Seeds per task of the final evaluation; 0 (the default): `eval_episodes` with keep_best, no
     *  final evaluation without. More seeds than the periodic evaluations' give the model's figure a
     *  smaller standard error. */
    int final_eval_episodes = 0;
    int final_episodes() const { return final_eval_episodes > 0 ? final_eval_episodes : keep_best ? eval_episodes : 0; }
    bool has_final_eval() const { return final_episodes() > 0; }
    uint64_t train_seed = 1000000;
    /** Seeds a run's training episodes may take: [train_seed + seed * span, + span). Runs with
     *  other `seed`s take the next blocks; evaluation seeds must lie outside the block. */
    static constexpr uint64_t kTrainingSeedSpan = 10'000'000;
    uint64_t first_training_seed() const { return train_seed + seed * kTrainingSeedSpan; }
    /** Whether the seed blocks [a, a + a_count) and [b, b + b_count) share a seed. */
    static bool seed_blocks_overlap(uint64_t a, uint64_t a_count, uint64_t b, uint64_t b_count) { return a < b + b_count && b < a + a_count; }
    /** Whether [first, first + count) shares a seed with the training block. */
    bool overlaps_training_seeds(uint64_t first, uint64_t count) const {
      return seed_blocks_overlap(first, count, first_training_seed(), kTrainingSeedSpan);
    }
  } run;

  /** Loads and validates `path` with `overrides` (`section.key=value`, checked as the file's keys);
   *  relative model paths resolve against the working directory. */
  static TrainConfig load(const std::string& path, const std::vector<std::string>& overrides = {});
  /** The resolved configuration, as YAML text (saved beside checkpoints and metrics). */
  std::string to_yaml() const;
  /** Every key with its type, default and doc (`turnrl config --reference`). */
  static std::vector<KeyInfo> reference();
  /** The format section's fine-tuning keys from `format.KEY=VALUE` overrides alone (`turnrl sft`),
   *  checked as a file's; any other key is refused. */
  static FineTuning fine_tuning(const std::vector<std::string>& overrides);
};

template <>
struct EnumNames<TrainConfig::Reward::Manager> {
  static const std::vector<std::string>& names() {
    static const std::vector<std::string> n = {"env", "episode"};
    return n;
  }
};
template <>
struct EnumNames<TrainConfig::Run::Decoding> {
  static const std::vector<std::string>& names() {
    static const std::vector<std::string> n = {"greedy", "sampled"};
    return n;
  }
};

}  // namespace turnrl::trainer
