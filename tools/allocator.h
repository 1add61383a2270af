#pragma once
// How `turnrl` sets up glibc's allocator before any command runs.
#include <malloc.h>

#include <cstdlib>

namespace turnrl::tools {

/** Set (to anything) in the environment, it leaves glibc's allocator at its defaults: the reference
 *  that `turnrl bench allocator` measures against, or a way to hand freed memory back to the system. */
inline constexpr const char* kGlibcMallocDefaultsVariable = "TURNRL_GLIBC_MALLOC_DEFAULTS";

/** glibc serves blocks over its mmap threshold with fresh mmaps and unmaps them on free, so every
 *  large activation of a training step would be page-faulted in anew, with much of the CPU time
 *  spent in the kernel (`turnrl bench allocator` measures it; figures in docs/results).
 *  Keeps freed memory in the heap instead; the process keeps its peak memory until it exits. */
inline void keep_freed_memory_in_heap() {
  if (std::getenv(kGlibcMallocDefaultsVariable)) return;
  mallopt(M_MMAP_MAX, 0);
  mallopt(M_TRIM_THRESHOLD, -1);
}

}  // namespace turnrl::tools
