#pragma once
// A run's evaluations: the periodic ones of the live actor (run.eval_every, on run.eval_seed's
// block), the best of them kept with run.keep_best, the run's model saved at the end, and the final
// evaluation of that model on seeds that took no part in choosing it (run.final_eval_*). Rank 0
// evaluates; the other ranks only keep count.
#include <memory>
#include <string>
#include <vector>

#include "agents/agent.h"
#include "trainer/algo/learner_state.h"
#include "trainer/eval/evaluation.h"
#include "trainer/run/checkpoint.h"
#include "trainer/run/learning_curve.h"
#include "trainer/run/metrics_log.h"
#include "trainer/run/time_budget.h"

namespace turnrl::trainer {

class RunEvaluator {
 public:
  /** `curve`: the evaluations so far (a resumed run's, from its checkpoint), extended here.
   *  `base_model`: the folder whose tokenizer the saved models carry. */
  RunEvaluator(LearnerState& learner, std::string base_model, MetricsLog& log, const TimeBudget& clock, std::vector<EvalPoint>& curve,
               int iteration);

  /** Scores `agent` (over the live actor) at `iteration`; with keep_best, saves it when it is the best so far. */
  void evaluate(agents::Agent& agent, int iteration);
  /** The iteration of the last evaluation (-1: none in this command). */
  int last_iteration() const { return last_iteration_; }
  /** What the last evaluation took (0 on ranks that do not evaluate). */
  double last_seconds() const { return last_seconds_; }
  /** Saves RUN/model (the best evaluated actor with keep_best, else the live one) and, unless
   *  `stopped`, scores it in the final evaluation. */
  void finish(int iteration, bool stopped);

 private:
  /** Scores `agent` on `episodes` seeds per task from `first_seed`, logs it, returns its metrics line. */
  nlohmann::json score(agents::Agent& agent, const char* type, int iteration, uint64_t first_seed, int episodes,
                       std::vector<TaskScore>* tasks_out);

  LearnerState& learner_;
  const TrainConfig& config_;
  std::string base_model_, best_dir_;
  MetricsLog& log_;
  const TimeBudget& clock_;
  std::vector<EvalPoint>& curve_;
  BestModel best_;
  int last_iteration_ = -1;
  double last_seconds_ = 0;
};

}  // namespace turnrl::trainer
