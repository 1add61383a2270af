#include "trainer/rollout/fiber_stacks.h"

#include <cstddef>

#include <boost/context/protected_fixedsize_stack.hpp>

#if defined(__SANITIZE_ADDRESS__)  // GCC
#define TURNRL_ASAN_FIBERS 1
#elif defined(__has_feature)  // clang
#if __has_feature(address_sanitizer)
#define TURNRL_ASAN_FIBERS 1
#endif
#endif

#ifdef TURNRL_ASAN_FIBERS
#include <map>
#include <mutex>

#include <boost/context/stack_traits.hpp>
#include <boost/fiber/algo/round_robin.hpp>
#include <boost/fiber/context.hpp>
#include <boost/fiber/operations.hpp>
#include <sanitizer/common_interface_defs.h>
#endif

namespace turnrl::trainer {
namespace {

// Env steps, prompt building and tokenising run on slot fibers: room to spare.
constexpr size_t kSlotStackBytes = size_t{1} << 20;

#ifdef TURNRL_ASAN_FIBERS
struct StackRange {
  const void* bottom = nullptr;
  size_t size = 0;
};

// Every live SlotStack of any thread, top -> bottom (above the guard page). Boost.Fiber places a
// fiber's context object at the top of its stack (boost::fibers::make_worker_context), so the
// stack of a context is the range that holds its address.
std::mutex stacks_mutex;
std::map<const char*, const char*> stacks;

// ASan's bounds of this thread's own stack: those of the main context, and of contexts on other
// stacks (the dispatcher, fibers started with Boost's default stack).
thread_local StackRange thread_stack;

/** Makes `next` ASan's current stack and returns the one it was. Called just before Boost
 *  switches, so the two calls run back to back on the old stack; the thread's fake stack (for
 *  detect_stack_use_after_return) is kept. */
StackRange asan_switch_to(StackRange next) {
  void* fake_stack = nullptr;
  StackRange old;
  __sanitizer_start_switch_fiber(&fake_stack, next.bottom, next.size);
  __sanitizer_finish_switch_fiber(fake_stack, &old.bottom, &old.size);
  return old;
}

StackRange stack_of(const boost::fibers::context* context) {
  const char* address = reinterpret_cast<const char*>(context);
  const std::lock_guard<std::mutex> lock(stacks_mutex);
  const auto it = stacks.upper_bound(address);  // the lowest top above the context
  if (it == stacks.end() || address < it->second) return thread_stack;
  return {it->second, static_cast<size_t>(it->first - it->second)};
}

// Boost's round robin, telling ASan which stack the context it picks runs on. Every switch goes
// through pick_next(), but for the dispatcher's last one, back to the main context at the
// scheduler's end: the dispatcher counts as the thread's stack, so that one needs no change.
class SlotScheduler final : public boost::fibers::algo::round_robin {
 public:
  boost::fibers::context* pick_next() noexcept override {
    boost::fibers::context* next = round_robin::pick_next();
    if (next) asan_switch_to(stack_of(next));
    return next;
  }
};
#endif

}  // namespace

boost::context::stack_context SlotStack::allocate() {
  boost::context::stack_context stack = boost::context::protected_fixedsize_stack(kSlotStackBytes).allocate();
#ifdef TURNRL_ASAN_FIBERS
  const char* top = static_cast<const char*>(stack.sp);
  const std::lock_guard<std::mutex> lock(stacks_mutex);
  stacks[top] = top - stack.size + boost::context::stack_traits::page_size();
#endif
  return stack;
}

void SlotStack::deallocate(boost::context::stack_context& stack) noexcept {
#ifdef TURNRL_ASAN_FIBERS
  {
    const std::lock_guard<std::mutex> lock(stacks_mutex);
    stacks.erase(static_cast<const char*>(stack.sp));
  }
#endif
  boost::context::protected_fixedsize_stack(kSlotStackBytes).deallocate(stack);
}

void use_slot_scheduler() {
#ifdef TURNRL_ASAN_FIBERS
  thread_local bool installed = false;
  if (installed) return;
  installed = true;
  // Only SlotScheduler moves ASan's bounds, so here they are still the thread stack's: read them.
  thread_stack = asan_switch_to({});
  asan_switch_to(thread_stack);
  boost::fibers::use_scheduling_algorithm<SlotScheduler>();
#endif
}

}  // namespace turnrl::trainer
