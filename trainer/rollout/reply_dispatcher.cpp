#include "trainer/rollout/reply_dispatcher.h"

#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "trainer/rollout/fiber_stacks.h"

namespace turnrl::trainer {

std::string error_message(const std::exception_ptr& error) {
  try {
    std::rethrow_exception(error);
  } catch (const std::exception& e) {
    return e.what();
  } catch (...) {
    return "unknown error";
  }
}

ReplyDispatcher::ReplyDispatcher(agents::Agent& agent, size_t batch_size, bool lock_step, size_t slots)
    : agent_(agent), batch_size_(lock_step ? 0 : batch_size), batched_(lock_step || !agent.asynchronous()), running_(slots) {
  use_slot_scheduler();  // before the thread's first fiber
  if (batched_) batcher_ = boost::fibers::fiber([this] { run_batches(); });
}

ReplyDispatcher::~ReplyDispatcher() {
  if (!batcher_.joinable()) return;
  {
    const std::unique_lock<boost::fibers::mutex> lock(mutex_);
    running_ = 0;
  }
  changed_.notify_all();
  batcher_.join();
}

agents::AgentResult ReplyDispatcher::ask(agents::AgentPrompt prompt) {
  if (outstanding_++ == 0) busy_since_ = std::chrono::steady_clock::now();
  boost::fibers::future<agents::AgentResult> reply;
  if (batched_) {
    const std::unique_lock<boost::fibers::mutex> lock(mutex_);
    pending_.push_back({std::move(prompt), {}});
    reply = pending_.back().reply.get_future();
    if (batch_ready()) changed_.notify_one();
  } else {
    boost::fibers::promise<agents::AgentResult> promise;
    reply = promise.get_future();
    send(std::move(prompt), std::move(promise));
  }
  agents::AgentResult result = reply.get();
  if (--outstanding_ == 0) {
    stats_.agent_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - busy_since_).count();
  }
  return result;
}

void ReplyDispatcher::leave() {
  {
    const std::unique_lock<boost::fibers::mutex> lock(mutex_);
    --running_;
  }
  changed_.notify_one();
}

bool ReplyDispatcher::batch_ready() const {
  if (pending_.empty()) return false;
  return pending_.size() >= running_ || (batch_size_ > 0 && pending_.size() >= batch_size_);
}

void ReplyDispatcher::run_batches() {
  for (;;) {
    std::vector<Request> batch;
    {
      std::unique_lock<boost::fibers::mutex> lock(mutex_);
      changed_.wait(lock, [this] { return batch_ready() || running_ == 0; });
      if (pending_.empty()) return;
      const size_t count = batch_size_ == 0 ? pending_.size() : std::min(batch_size_, pending_.size());
      for (size_t i = 0; i < count; ++i) {
        batch.push_back(std::move(pending_.front()));
        pending_.pop_front();
      }
    }
    ++stats_.batches;
    if (agent_.batched_act()) {
      act_on_worker(batch);
    } else {
      for (Request& request : batch) send(std::move(request.prompt), std::move(request.reply));
    }
  }
}

void ReplyDispatcher::send(agents::AgentPrompt prompt, boost::fibers::promise<agents::AgentResult> reply) {
  // The promise outlives the asking fiber if the agent answers late (it may, on another thread).
  auto promise = std::make_shared<boost::fibers::promise<agents::AgentResult>>(std::move(reply));
  ++stats_.requests;
  agent_.submit(std::move(prompt), [promise](agents::AgentResult result) { promise->set_value(std::move(result)); });
}

void ReplyDispatcher::act_on_worker(std::vector<Request>& batch) {
  std::vector<agents::AgentPrompt> prompts;
  for (Request& request : batch) prompts.push_back(std::move(request.prompt));
  stats_.requests += prompts.size();
  std::vector<agents::AgentReply> replies;
  std::exception_ptr error;
  boost::fibers::promise<void> finished;
  boost::fibers::future<void> done = finished.get_future();
  std::thread worker([&] {
    try {
      replies = agent_.act(prompts);
      if (replies.size() != prompts.size()) {
        throw std::runtime_error("agent " + agent_.name() + " returned " + std::to_string(replies.size()) + " replies for " +
                                 std::to_string(prompts.size()) + " prompts");
      }
    } catch (...) {
      error = std::current_exception();
    }
    finished.set_value();
  });
  done.wait();
  worker.join();
  for (size_t i = 0; i < batch.size(); ++i) {
    agents::AgentResult result;
    if (error) result.error = error;
    else result.reply = std::move(replies[i]);
    batch[i].reply.set_value(std::move(result));
  }
}

}  // namespace turnrl::trainer
