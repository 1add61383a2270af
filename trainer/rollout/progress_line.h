#pragma once
// A progress line for long sweeps and benchmarks: episodes done, turns per second and an ETA,
// logged on a timer (run_slot_fibers' tick) as well as at the end.
#include <chrono>
#include <cstddef>
#include <string>

namespace turnrl::trainer {

class ProgressLine {
 public:
  /** A total of 0 is unknown. The ETA follows turns when their total is known, else episodes. */
  ProgressLine(std::string what, size_t total_episodes, size_t total_turns = 0);
  void add_turn() { ++turns_; }
  void add_episode() { ++episodes_; }
  /** "what: 12/60 episodes, 345 turns, 34.5 turns/s, ETA 1m 20s" (info log). */
  void report() const;
  std::string line() const;

 private:
  std::string what_;
  size_t total_episodes_, total_turns_;
  size_t episodes_ = 0, turns_ = 0;
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
};

}  // namespace turnrl::trainer
