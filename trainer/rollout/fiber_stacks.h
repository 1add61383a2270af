#pragma once
// The stacks of slot fibers, and, in AddressSanitizer builds, ASan's view of them. Boost.Fiber
// (Debian's 1.74, fcontext) switches stacks without telling ASan, so ASan takes a fiber's frames
// for the thread stack's: an exception thrown on a fiber makes it skip unpoisoning the frames
// unwound ("ASan is ignoring requested __asan_handle_no_return", google/sanitizers#189) and their
// stale poison gives false reports later. Include only from .cpp files (Boost.Context header).
#include <boost/context/stack_context.hpp>

namespace turnrl::trainer {

/** Stack allocator of slot fibers: 1 MiB with a guard page below, so that an overflow faults
 *  instead of corrupting a neighbour. ASan builds record each stack for use_slot_scheduler(). */
class SlotStack {
 public:
  boost::context::stack_context allocate();
  void deallocate(boost::context::stack_context& stack) noexcept;
};

/** Call on a thread before its first fiber (ReplyDispatcher, run_slot_fibers; again: no-op).
 *  ASan builds: installs a round-robin scheduler that, whenever it picks a fiber, makes ASan's
 *  current stack that fiber's SlotStack (the thread's own stack for other contexts). Other
 *  builds: nothing (Boost's round robin). */
void use_slot_scheduler();

}  // namespace turnrl::trainer
