#pragma once
// How slot fibers get their replies. A slot fiber calls ask() and only that fiber waits: the
// thread meanwhile runs the slots whose replies are back. Three ways to reach the agent:
//  - asynchronous agents (Agent::asynchronous) get each prompt at once through submit(): no
//    batch barrier, each slot goes at its own pace;
//  - other agents answer batches through act() on a worker thread, one batch at a time; a batch
//    leaves once `batch_size` prompts wait or every running slot waits;
//  - lock-step: a batch leaves only when every running slot waits (Verlog's loop), with any
//    agent, for comparison; through act(), or prompt by prompt through submit() for agents whose
//    act() only submits and waits (Agent::batched_act), so each request fails alone.
// Include only from .cpp files (Boost.Fiber headers).
#include <chrono>
#include <cstddef>
#include <deque>
#include <exception>
#include <memory>
#include <string>

#include <boost/fiber/all.hpp>

#include "agents/agent.h"

namespace turnrl::trainer {

struct DispatchStats {
  size_t batches = 0, requests = 0;  // batches sent (act() calls, or lock-step turns submitted prompt by prompt)
  double agent_seconds = 0.0;        // wall time with at least one request outstanding
};

/** The message of an agent error (AgentResult::error). */
std::string error_message(const std::exception_ptr& error);

class ReplyDispatcher {
 public:
  /** `batch_size` 0: no limit (every waiting slot). `slots`: the slot fibers that will ask. */
  ReplyDispatcher(agents::Agent& agent, size_t batch_size, bool lock_step, size_t slots);
  /** Waits for the batching fiber; call once every slot fiber has left. */
  ~ReplyDispatcher();
  ReplyDispatcher(const ReplyDispatcher&) = delete;
  ReplyDispatcher& operator=(const ReplyDispatcher&) = delete;

  /** From a slot fiber: the reply to `prompt`, or the agent's error. */
  agents::AgentResult ask(agents::AgentPrompt prompt);
  /** A slot fiber is done asking: batches stop waiting for it. */
  void leave();
  const DispatchStats& stats() const { return stats_; }

 private:
  struct Request {
    agents::AgentPrompt prompt;
    boost::fibers::promise<agents::AgentResult> reply;
  };
  /** The batching fiber's loop (act() agents and lock-step). */
  void run_batches();
  /** `batch` through act() on a worker thread, this thread's other fibers running meanwhile. */
  void act_on_worker(std::vector<Request>& batch);
  /** One request through submit(); its reply fulfils `reply`. */
  void send(agents::AgentPrompt prompt, boost::fibers::promise<agents::AgentResult> reply);
  bool batch_ready() const;

  agents::Agent& agent_;
  const size_t batch_size_;
  const bool batched_;
  size_t running_;  // slot fibers that have not left
  std::deque<Request> pending_;
  boost::fibers::mutex mutex_;  // only fibers of this thread touch the members; the mutex pairs with the condition
  boost::fibers::condition_variable changed_;
  boost::fibers::fiber batcher_;
  DispatchStats stats_;
  size_t outstanding_ = 0;
  std::chrono::steady_clock::time_point busy_since_;
};

}  // namespace turnrl::trainer
