#pragma once
// `turnrl env-server` and `turnrl serve` child processes for the tests (loopback only; every wait is bounded).
#include <doctest/doctest.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <optional>
#include <string>
#include <thread>

namespace turnrl::test {

/** A `turnrl` server as a child process on loopback, whose first line is "listening on ADDRESS". */
class ServerProcess {
 public:
  using Clock = std::chrono::steady_clock;
  /** `turnrl <arguments>` (e.g. `serve --model DIR --port 0`). */
  struct Command {
    std::string arguments;
  };
  /** `turnrl env-server`: a free port, or `bind` (a restart on a known one). */
  explicit ServerProcess(const std::string& extra_args = "", const std::string& bind = "tcp://127.0.0.1:*")
      : ServerProcess(Command{"env-server --bind '" + bind + "' --slots 8 " + extra_args}) {}
  explicit ServerProcess(const Command& command) {
    int out[2];
    REQUIRE(pipe(out) == 0);
    pid_ = fork();
    REQUIRE(pid_ >= 0);
    if (pid_ == 0) {
      dup2(out[1], STDOUT_FILENO);
      close(out[0]);
      close(out[1]);
      const std::string line = std::string("exec '") + TURNRL_BINARY + "' " + command.arguments;
      execl("/bin/sh", "sh", "-c", line.c_str(), static_cast<char*>(nullptr));
      _exit(127);
    }
    close(out[1]);
    stdout_ = out[0];
    // The first line names the bound endpoint: "listening on tcp://127.0.0.1:PORT".
    std::string line;
    const Clock::time_point deadline = Clock::now() + std::chrono::seconds(20);
    while (line.find('\n') == std::string::npos && Clock::now() < deadline) {
      pollfd fd{stdout_, POLLIN, 0};
      if (poll(&fd, 1, 100) <= 0) continue;
      char c[256];
      const ssize_t n = read(stdout_, c, sizeof c);
      if (n <= 0) break;
      line.append(c, n);
    }
    const std::string prefix = "listening on ";
    if (!line.starts_with(prefix)) {
      stop();  // the destructor does not run after a failed constructor
      FAIL("turnrl " << command.arguments << " printed: " << line);
    }
    endpoint_ = line.substr(prefix.size(), line.find('\n') - prefix.size());
  }
  ~ServerProcess() { stop(); }
  const std::string& endpoint() const { return endpoint_; }

  /** Sends `signal` and waits up to `limit` for the exit; the wait status, or nullopt on timeout. */
  std::optional<int> signal_and_wait(int signal, std::chrono::milliseconds limit) {
    kill(pid_, signal);
    const Clock::time_point deadline = Clock::now() + limit;
    while (Clock::now() < deadline) {
      int status = 0;
      if (waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        return status;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return std::nullopt;
  }

 private:
  void stop() {
    if (pid_ > 0) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
      pid_ = -1;
    }
    if (stdout_ >= 0) close(stdout_);
    stdout_ = -1;
  }

  pid_t pid_ = -1;
  int stdout_ = -1;
  std::string endpoint_;
};

}  // namespace turnrl::test
