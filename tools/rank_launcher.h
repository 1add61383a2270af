#pragma once
// `turnrl train --nproc N`, `turnrl sft --nproc N`: the N ranks of one data-parallel run on this
// machine, as child processes of this one meeting on loopback; --rank/--world-size/--master: one
// rank of a run across machines.
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

namespace turnrl::trainer {
class ProcessGroup;  // trainer/dist/distributed.h
}

namespace turnrl::tools {

/** A data-parallel command's options: --nproc N, or --rank R --world-size W --master HOST:PORT. */
struct RankOptions {
  int nproc = 1, rank = -1, world_size = 0;
  std::string master;

  /** Adds the options to `app`, with their constraints (--nproc excludes the other three, which need each other). */
  void add_to(CLI::App& app);
  /** With --nproc > 1, runs `turnrl COMMAND ...` (argv less --nproc) as the ranks and returns its
   *  exit code (run_ranks); otherwise nothing, and this process goes on. */
  std::optional<int> launch(int argc, char** argv) const;
  /** The process group of this rank (its log lines named by rank, only rank 0's below warnings);
   *  null for a process alone. */
  std::shared_ptr<trainer::ProcessGroup> join() const;
};

/** Runs `turnrl <arguments> --rank R --world-size N --master 127.0.0.1:PORT` for R = 0..N-1 (PORT:
 *  a free one), forwards SIGINT and SIGTERM to them and waits for all. When one fails, the others
 *  get SIGTERM, and SIGKILL if they are still there after a grace period. Returns 0 when every
 *  rank exited with 0, else kExitFailure. */
int run_ranks(int nproc, const std::vector<std::string>& arguments);

}  // namespace turnrl::tools
