#include "agents/model/generation_engine.h"

#include <stdexcept>

#include <ATen/Parallel.h>

namespace turnrl::agents {

GenerationEngine::GenerationEngine(std::shared_ptr<LanguageModel> model, int max_batch, uint64_t prefix_cache_bytes)
    : model_(std::move(model)), batcher_(*model_, max_batch, prefix_cache_bytes), thread_([this] { run(); }) {}

GenerationEngine::~GenerationEngine() {
  {
    const std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_one();
  thread_.join();
}

void GenerationEngine::submit(GenerationRequest request) {
  batcher_.check(request);
  {
    const std::lock_guard lock(mutex_);
    inbox_.push_back(std::move(request));
  }
  wake_.notify_one();
}

BatcherStats GenerationEngine::stats() {
  const std::lock_guard lock(mutex_);
  return stats_;
}

void GenerationEngine::run() {
  at::init_num_threads();  // this thread takes the process's compute-thread setting (OpenMP's is per thread)
  std::vector<GenerationRequest> arrived;
  for (;;) {
    {
      std::unique_lock lock(mutex_);
      wake_.wait(lock, [&] { return stopping_ || !inbox_.empty() || !batcher_.idle(); });
      if (stopping_) break;
      arrived.swap(inbox_);
    }
    try {
      for (GenerationRequest& request : arrived) batcher_.add(std::move(request));
      arrived.clear();
      batcher_.step();
    } catch (...) {  // the batcher ends its own failed steps' requests; anything else ends them all
      arrived.clear();
      batcher_.fail_all(std::current_exception());
    }
    const BatcherStats stats = batcher_.stats();
    const std::lock_guard lock(mutex_);
    stats_ = stats;
  }
  const auto stopped = std::make_exception_ptr(std::runtime_error("the generation engine stopped"));
  batcher_.fail_all(stopped);
  {
    const std::lock_guard lock(mutex_);
    arrived.swap(inbox_);
  }
  for (GenerationRequest& request : arrived) {
    GenerationResult result;
    result.error = stopped;
    request.on_done(std::move(result));
  }
}

}  // namespace turnrl::agents
