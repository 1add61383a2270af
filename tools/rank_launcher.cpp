#include "tools/rank_launcher.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <climits>
#include <cstring>
#include <stdexcept>
#include <thread>

#include <spdlog/spdlog.h>

#include "tools/cli.h"
#include "trainer/dist/distributed.h"

namespace turnrl::tools {
namespace {

constexpr auto kGracePeriod = std::chrono::seconds(20);  // for the ranks to notice a failed one and exit
constexpr int kMaxRanks = 256;

// The children, for the signal handler (0: reaped).
volatile sig_atomic_t children[kMaxRanks];
volatile sig_atomic_t child_count = 0;

extern "C" void forward_signal(int signal_number) {
  for (int i = 0; i < child_count; ++i) {
    if (children[i] > 0) kill(children[i], signal_number);
  }
}

std::string self_executable() {
  char path[PATH_MAX];
  const ssize_t n = readlink("/proc/self/exe", path, sizeof path - 1);
  if (n <= 0) throw std::runtime_error("cannot find this executable (/proc/self/exe)");
  return std::string(path, static_cast<size_t>(n));
}

/** Forks and executes; the child gets `signal_mask` (the parent blocks signals meanwhile). */
pid_t spawn(const std::string& executable, const std::vector<std::string>& arguments, const sigset_t& signal_mask) {
  std::vector<char*> argv;
  argv.push_back(const_cast<char*>(executable.c_str()));
  for (const std::string& a : arguments) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  const pid_t pid = fork();
  if (pid < 0) throw std::runtime_error(std::string("fork: ") + std::strerror(errno));
  if (pid == 0) {
    sigprocmask(SIG_SETMASK, &signal_mask, nullptr);
    execv(executable.c_str(), argv.data());
    _exit(127);
  }
  return pid;
}

std::string describe(int status) {
  if (WIFEXITED(status)) return "exit code " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) return std::string("signal ") + strsignal(WTERMSIG(status));
  return "status " + std::to_string(status);
}

}  // namespace

int run_ranks(int nproc, const std::vector<std::string>& arguments) {
  if (nproc < 2 || nproc > kMaxRanks) throw std::invalid_argument("--nproc must be in 2.." + std::to_string(kMaxRanks));
  const std::string executable = self_executable();
  const std::string master = trainer::loopback_master();
  spdlog::info("starting {} ranks; rank 0 hosts the store on {}", nproc, master);
  // Blocked while the children start, so that a signal cannot miss one.
  sigset_t forwarded, previous;
  sigemptyset(&forwarded);
  sigaddset(&forwarded, SIGINT);
  sigaddset(&forwarded, SIGTERM);
  sigprocmask(SIG_BLOCK, &forwarded, &previous);
  struct sigaction action {};
  action.sa_handler = forward_signal;
  sigemptyset(&action.sa_mask);
  sigaction(SIGINT, &action, nullptr);
  sigaction(SIGTERM, &action, nullptr);
  for (int rank = 0; rank < nproc; ++rank) {
    std::vector<std::string> rank_arguments = arguments;
    for (const std::string& a : {std::string("--rank"), std::to_string(rank), std::string("--world-size"), std::to_string(nproc),
                                 std::string("--master"), master}) {
      rank_arguments.push_back(a);
    }
    try {
      children[rank] = spawn(executable, rank_arguments, previous);
    } catch (...) {
      forward_signal(SIGKILL);  // the ranks started would wait for this one until their timeout
      throw;
    }
    child_count = rank + 1;
  }
  sigprocmask(SIG_SETMASK, &previous, nullptr);

  int running = nproc, failures = 0;
  std::chrono::steady_clock::time_point kill_at = std::chrono::steady_clock::time_point::max();
  while (running > 0) {
    int status = 0;
    const pid_t pid = waitpid(-1, &status, WNOHANG);
    if (pid <= 0) {
      if (pid < 0 && errno != EINTR) break;
      if (std::chrono::steady_clock::now() >= kill_at) {
        spdlog::error("ranks still running {} s after a failure: killing them", kGracePeriod.count());
        forward_signal(SIGKILL);
        kill_at = std::chrono::steady_clock::time_point::max();
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      continue;
    }
    --running;
    int rank = 0;
    while (rank < nproc && children[rank] != pid) ++rank;
    if (rank < nproc) children[rank] = 0;
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0) continue;
    ++failures;
    spdlog::error("rank {} failed ({})", rank, describe(status));
    if (failures == 1 && running > 0) {
      forward_signal(SIGTERM);
      kill_at = std::chrono::steady_clock::now() + kGracePeriod;
    }
  }
  return failures == 0 ? 0 : kExitFailure;
}

void RankOptions::add_to(CLI::App& app) {
  auto* nproc_option = app.add_option("--nproc", nproc, "ranks to run on this machine (over loopback)")->check(CLI::Range(1, kMaxRanks));
  auto* rank_option = app.add_option("--rank", rank, "this process's rank in a multi-machine run (0 hosts the store)")
                          ->check(CLI::NonNegativeNumber)->excludes(nproc_option);
  auto* world_option = app.add_option("--world-size", world_size, "ranks in the run")->check(CLI::PositiveNumber)->excludes(nproc_option);
  auto* master_option = app.add_option("--master", master, "HOST:PORT where rank 0 hosts the store")->excludes(nproc_option);
  rank_option->needs(world_option, master_option);
  world_option->needs(rank_option, master_option);
  master_option->needs(rank_option, world_option);
}

std::optional<int> RankOptions::launch(int argc, char** argv) const {
  if (nproc <= 1) return std::nullopt;
  std::vector<std::string> arguments(argv, argv + argc);  // argv[0]: the command's name
  for (size_t i = 0; i < arguments.size(); ++i) {
    if (arguments[i] == "--nproc") {
      arguments.erase(arguments.begin() + static_cast<long>(i), arguments.begin() + static_cast<long>(i) + 2);
      break;
    }
    if (arguments[i].starts_with("--nproc=")) {
      arguments.erase(arguments.begin() + static_cast<long>(i));
      break;
    }
  }
  return run_ranks(nproc, arguments);
}

std::shared_ptr<trainer::ProcessGroup> RankOptions::join() const {
  if (world_size <= 1) {
    if (rank > 0) throw std::invalid_argument("--rank " + std::to_string(rank) + " is not below --world-size " + std::to_string(world_size));
    return nullptr;
  }
  spdlog::set_pattern("[%Y-%m-%d %H:%M:%S.%e] [rank " + std::to_string(rank) + "] [%^%l%$] %v");
  if (rank > 0) spdlog::set_level(spdlog::level::warn);
  return std::make_shared<trainer::ProcessGroup>(trainer::ProcessGroupOptions{rank, world_size, master});
}

}  // namespace turnrl::tools
