#include "trainer/rollout/progress_line.h"

#include <cmath>

#include <spdlog/spdlog.h>

namespace turnrl::trainer {
namespace {

std::string duration_text(double seconds) {
  const long s = std::lround(seconds);
  if (s >= 3600) return fmt::format("{}h {}m", s / 3600, s % 3600 / 60);
  if (s >= 60) return fmt::format("{}m {}s", s / 60, s % 60);
  return fmt::format("{}s", s);
}

}  // namespace

ProgressLine::ProgressLine(std::string what, size_t total_episodes, size_t total_turns)
    : what_(std::move(what)), total_episodes_(total_episodes), total_turns_(total_turns) {}

std::string ProgressLine::line() const {
  const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  auto count = [](size_t done, size_t total) { return total ? fmt::format("{}/{}", done, total) : fmt::format("{}", done); };
  std::string text = fmt::format("{}: {} episodes, {} turns", what_, count(episodes_, total_episodes_), count(turns_, total_turns_));
  if (elapsed <= 0) return text;
  double share = 0;  // of the work done
  if (total_turns_ > 0) share = static_cast<double>(turns_) / total_turns_;
  else if (total_episodes_ > 0) share = static_cast<double>(episodes_) / total_episodes_;
  return fmt::format("{}, {:.1f} turns/s, ETA {}", text, turns_ / elapsed, share > 0 ? duration_text(elapsed * (1 - share) / share) : "?");
}

void ProgressLine::report() const { spdlog::info("{}", line()); }

}  // namespace turnrl::trainer
