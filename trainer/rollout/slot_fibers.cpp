#include "trainer/rollout/slot_fibers.h"

#include <chrono>
#include <exception>
#include <mutex>
#include <vector>

#include <boost/fiber/all.hpp>

#include "trainer/rollout/fiber_stacks.h"

namespace turnrl::trainer {

void run_slot_fibers(size_t count, const std::function<void(size_t slot, const std::function<bool()>& stopping)>& slot,
                     double tick_s, const std::function<void()>& tick) {
  use_slot_scheduler();
  std::exception_ptr failure;
  const std::function<bool()> stopping = [&failure] { return static_cast<bool>(failure); };
  size_t running = count;
  boost::fibers::mutex mutex;
  boost::fibers::condition_variable all_ended;
  std::vector<boost::fibers::fiber> fibers;
  fibers.reserve(count);
  for (size_t i = 0; i < count; ++i) {
    fibers.emplace_back(std::allocator_arg, SlotStack(), [&, i] {
      try {
        slot(i, stopping);
      } catch (...) {
        if (!failure) failure = std::current_exception();
      }
      {
        const std::unique_lock<boost::fibers::mutex> lock(mutex);
        --running;
      }
      all_ended.notify_all();
    });
  }
  if (tick_s > 0 && tick) {
    const auto every = std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(tick_s));
    std::unique_lock<boost::fibers::mutex> lock(mutex);
    while (!all_ended.wait_for(lock, every, [&] { return running == 0; })) {
      lock.unlock();
      tick();
      lock.lock();
    }
  }
  for (boost::fibers::fiber& fiber : fibers) fiber.join();
  if (failure) std::rethrow_exception(failure);
}

}  // namespace turnrl::trainer
