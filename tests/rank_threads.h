#pragma once
// Ranks of a data-parallel run as threads of one test process, joined by Gloo over loopback.
#include <exception>
#include <functional>
#include <memory>
#include <thread>
#include <vector>

#include "trainer/dist/distributed.h"

namespace turnrl::test {

/** Runs `body(group)` on `ranks` threads, each a rank of one process group; rethrows a rank's error. */
inline void run_as_ranks(int ranks, const std::function<void(const std::shared_ptr<trainer::ProcessGroup>&)>& body) {
  const std::string master = trainer::loopback_master();
  std::vector<std::exception_ptr> errors(static_cast<size_t>(ranks));
  std::vector<std::thread> threads;
  for (int r = 0; r < ranks; ++r) {
    threads.emplace_back([&, r] {
      try {
        body(std::make_shared<trainer::ProcessGroup>(trainer::ProcessGroupOptions{r, ranks, master}));
      } catch (...) {
        errors[static_cast<size_t>(r)] = std::current_exception();
      }
    });
  }
  for (auto& t : threads) t.join();
  for (const auto& e : errors) {
    if (e) std::rethrow_exception(e);
  }
}

}  // namespace turnrl::test
