#pragma once
// Gathers the prompts of waiting env slots into batched agent calls. With pipelining, one batch
// generates on a worker thread while the caller steps the slots whose replies came back and
// builds their next prompts; lock-step mode waits for every slot (Verlog's loop), for comparison.
#include <chrono>
#include <cstddef>
#include <deque>
#include <future>
#include <utility>
#include <vector>

#include "agents/agent.h"

namespace turnrl::trainer {

struct SchedulerStats {
  size_t batches = 0, requests = 0;
  double agent_seconds = 0.0;  // time inside Agent::act
};

class BatchScheduler {
 public:
  /** `batch_size` 0: no limit. `pipelined` false: every call waits for its batch (lock-step). */
  BatchScheduler(agents::Agent& agent, size_t batch_size, bool pipelined);
  ~BatchScheduler();

  void submit(size_t slot, agents::AgentPrompt prompt);
  /** Replies of the next finished batch, as (slot, reply); empty when nothing is pending.
   *  The following batch is launched before returning, so it overlaps the caller's work. */
  std::vector<std::pair<size_t, agents::AgentReply>> next_replies();
  bool idle() const { return pending_.empty() && !in_flight_.valid(); }
  const SchedulerStats& stats() const { return stats_; }

 private:
  using Batch = std::vector<std::pair<size_t, agents::AgentReply>>;
  void launch();

  agents::Agent& agent_;
  size_t batch_size_;
  bool pipelined_;
  std::deque<std::pair<size_t, agents::AgentPrompt>> pending_;
  std::future<std::pair<Batch, double>> in_flight_;
  SchedulerStats stats_;
};

}  // namespace turnrl::trainer
