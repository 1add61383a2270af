#include "trainer/rollout/batch_scheduler.h"

#include <stdexcept>
#include <string>

namespace turnrl::trainer {

BatchScheduler::BatchScheduler(agents::Agent& agent, size_t batch_size, bool pipelined)
    : agent_(agent), batch_size_(batch_size), pipelined_(pipelined) {}

BatchScheduler::~BatchScheduler() {
  if (in_flight_.valid()) in_flight_.wait();  // the worker refers to members
}

void BatchScheduler::submit(size_t slot, agents::AgentPrompt prompt) { pending_.emplace_back(slot, std::move(prompt)); }

void BatchScheduler::launch() {
  const size_t count = batch_size_ == 0 ? pending_.size() : std::min(batch_size_, pending_.size());
  std::vector<size_t> slots;
  std::vector<agents::AgentPrompt> prompts;
  for (size_t i = 0; i < count; ++i) {
    slots.push_back(pending_.front().first);
    prompts.push_back(std::move(pending_.front().second));
    pending_.pop_front();
  }
  ++stats_.batches;
  stats_.requests += count;
  auto work = [this, slots = std::move(slots), prompts = std::move(prompts)]() {
    const auto start = std::chrono::steady_clock::now();
    std::vector<agents::AgentReply> replies = agent_.act(prompts);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (replies.size() != prompts.size()) {
      throw std::runtime_error("agent " + agent_.name() + " returned " + std::to_string(replies.size()) + " replies for " +
                               std::to_string(prompts.size()) + " prompts");
    }
    Batch batch;
    for (size_t i = 0; i < slots.size(); ++i) batch.emplace_back(slots[i], std::move(replies[i]));
    return std::make_pair(std::move(batch), seconds);
  };
  in_flight_ = std::async(pipelined_ ? std::launch::async : std::launch::deferred, std::move(work));
}

std::vector<std::pair<size_t, agents::AgentReply>> BatchScheduler::next_replies() {
  if (!in_flight_.valid()) {
    if (pending_.empty()) return {};
    launch();
  }
  auto [batch, seconds] = in_flight_.get();
  stats_.agent_seconds += seconds;
  if (pipelined_ && !pending_.empty()) launch();
  return std::move(batch);
}

}  // namespace turnrl::trainer
