#include "trainer/run/run_evaluator.h"

#include <spdlog/spdlog.h>

#include <chrono>
#include <filesystem>

#include "agents/model/language_model.h"
#include "trainer/rollout/policy_agent.h"
#include "trainer/run/run_folder.h"

namespace turnrl::trainer {

RunEvaluator::RunEvaluator(LearnerState& learner, std::string base_model, MetricsLog& log, const TimeBudget& clock,
                           std::vector<EvalPoint>& curve, int iteration)
    : learner_(learner),
      config_(learner.config),
      base_model_(std::move(base_model)),
      best_dir_(config_.run.out + "/best"),
      log_(log),
      clock_(clock),
      curve_(curve) {
  if (!log_.writer() || !config_.run.keep_best) return;
  // A fresh run forgets an earlier run's best; a resumed one goes on from its own.
  if (iteration > 0) {
    best_ = read_best_model(best_dir_);
  } else {
    std::filesystem::remove_all(best_dir_);
    std::filesystem::remove_all(best_dir_ + ".old");
  }
}

nlohmann::json RunEvaluator::score(agents::Agent& agent, const char* type, int iteration, uint64_t first_seed, int episodes,
                                   std::vector<TaskScore>* tasks_out) {
  const TrainConfig& c = config_;
  const EvaluationSpec spec{c.env.ids, c.env.options, c.turn, first_seed, episodes};
  const std::vector<TaskScore> tasks = trainer::evaluate(spec, agent);
  const nlohmann::json scores = scores_json(tasks);
  double length = 0;
  for (const TaskScore& task : tasks) length += task.mean_length / tasks.size();
  const double success = scores["overall"]["success"];
  const double progression = scores["overall"]["progression"];
  const double progression_se = scores["overall"]["progression_se"];
  const std::string& decoding = enum_name(c.run.eval_decoding);
  const double minutes = clock_.elapsed() / 60.0;
  spdlog::info("{:<5} iter {:4d} | {:5.1f} min | {} success {:.3f}, progression {:.3f} +- {:.3f} on {} seeds from {} per task | mean length {:.1f}",
               type, iteration, minutes, decoding, success, progression, progression_se, episodes, first_seed, length);
  for (const TaskScore& task : tasks) {
    if (tasks.size() > 1) spdlog::info("      {:<28} {} success {:.3f}, progression {:.3f}", task.task, decoding, task.success, task.progression);
    if (!task.unlock_rates.empty()) spdlog::info("      {:<28} Crafter score {:.1f}%: {}", task.task, task.crafter_score, unlock_summary(task));
  }
  if (tasks_out) *tasks_out = tasks;
  return nlohmann::json{{"type", type},         {"iteration", iteration},     {"minutes", minutes},
                        {"decoding", decoding}, {"success", success},         {"progression", progression},
                        {"progression_se", progression_se}, {"mean_length", length}, {"episodes", episodes}, {"first_seed", first_seed},
                        {"tasks", scores["tasks"]}};
}

void RunEvaluator::evaluate(agents::Agent& agent, int iteration) {
  last_iteration_ = iteration;
  const TrainConfig& c = config_;
  if (c.run.eval_episodes <= 0 || !log_.writer()) return;
  const auto start = std::chrono::steady_clock::now();
  std::vector<TaskScore> tasks;
  nlohmann::json line = score(agent, "eval", iteration, c.run.eval_seed, c.run.eval_episodes, &tasks);
  const double progression = line["progression"];
  std::vector<double> task_progression;
  for (const TaskScore& task : tasks) task_progression.push_back(task.progression);
  curve_.push_back({clock_.elapsed() / 60.0, iteration, progression, task_progression});
  if (c.run.keep_best && (best_.iteration < 0 || progression > best_.progression)) {
    best_ = {iteration, progression};
    save_model(best_dir_, learner_, base_model_, &best_);
    line["best"] = true;
  }
  log_.write(line);
  write_learning_curve_svg(c.run.out + "/curve.svg", curve_, c.env.ids, enum_name(c.run.eval_decoding));
  last_seconds_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

void RunEvaluator::finish(int iteration, bool stopped) {
  if (!log_.writer()) return;
  const TrainConfig& c = config_;
  int model_iteration = iteration;
  if (c.run.keep_best && best_.iteration >= 0) {
    copy_model(complete_folder(best_dir_, "best.json"), c.run.out + "/model");
    model_iteration = best_.iteration;
    spdlog::info("model: the actor of iteration {} (progression {:.3f}, the best evaluation); the last one is in {}/checkpoint/actor",
                 best_.iteration, best_.progression, c.run.out);
  } else {
    save_model(c.run.out + "/model", learner_, base_model_);
  }
  // With keep_best the evaluation seeds chose the model, so its score on them reads high: score it
  // once more on seeds that took no part in the choice, decoded as the run's evaluations are.
  if (!c.run.has_final_eval() || stopped) return;
  const std::unique_ptr<agents::Agent> model =
      make_policy_agent(agents::LanguageModel::load(c.run.out + "/model", c.model.device), c, c.run.eval_decoding == TrainConfig::Run::Decoding::kGreedy, c.run.seed);
  log_.write(score(*model, "final", model_iteration, c.run.final_eval_seed, c.run.final_episodes(), nullptr));
}

}  // namespace turnrl::trainer
