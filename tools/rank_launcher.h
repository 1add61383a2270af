#pragma once
// `turnrl train --nproc N`: the N ranks of one data-parallel run on this machine, as child
// processes of this one meeting on loopback.
#include <string>
#include <vector>

namespace turnrl::tools {

/** Runs `turnrl <arguments> --rank R --world-size N --master 127.0.0.1:PORT` for R = 0..N-1 (PORT:
 *  a free one), forwards SIGINT and SIGTERM to them and waits for all. When one fails, the others
 *  get SIGTERM, and SIGKILL if they are still there after a grace period. Returns 0 when every
 *  rank exited with 0, else kExitFailure. */
int run_ranks(int nproc, const std::vector<std::string>& arguments);

}  // namespace turnrl::tools
