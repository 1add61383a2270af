#include "agents/model/compute_threads.h"

#include <dlfcn.h>

#include <stdexcept>

#include <torch/torch.h>

#include "agents/model/cpu_kernels.h"

namespace turnrl::agents {

void set_compute_threads(int threads) {
  if (threads <= 0) throw std::invalid_argument("compute threads must be > 0");
  torch::set_num_threads(threads);
  cpu_kernels::set_threads(threads);
  // Looked up at run time: the BLAS is whatever libblas.so.3 the system provides.
  using SetThreads = void (*)(int);
  if (auto set_blas = reinterpret_cast<SetThreads>(dlsym(RTLD_DEFAULT, "openblas_set_num_threads"))) set_blas(threads);
}

}  // namespace turnrl::agents
