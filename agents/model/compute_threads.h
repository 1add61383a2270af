#pragma once
// One knob for CPU parallelism: torch's intra-op threads and the system BLAS's own pool (Debian's
// libtorch multiplies through OpenBLAS, whose threads would otherwise spin against torch's).

namespace turnrl::agents {

/** Sets both pools, and the threads of the fused CPU attention, to `threads` (> 0). */
void set_compute_threads(int threads);

}  // namespace turnrl::agents
