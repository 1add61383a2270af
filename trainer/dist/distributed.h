#pragma once
// The ranks of a data-parallel run (torch c10d): they meet through a TCPStore that rank 0 hosts on
// the master's port, then talk through Gloo (CPU tensors) and, where libtorch was built with it,
// NCCL (CUDA tensors, when every rank has a GPU of its own; otherwise they go through Gloo by way
// of CPU copies). Every
// method is a collective: all ranks call it, in the same order. c10d's headers stay in the .cpp.
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <torch/torch.h>

#include "trainer/dist/rank_sum.h"

namespace turnrl::trainer {

struct ProcessGroupOptions {
  int rank = 0;
  int world_size = 1;
  std::string master = "127.0.0.1:29500";  // HOST:PORT of rank 0's store
  /** Longest wait for the other ranks, at the rendezvous and in every collective (rank 0 evaluates
   *  and saves alone while the others wait). */
  std::chrono::milliseconds timeout = std::chrono::minutes(60);
};

/** "HOST:PORT" split; std::invalid_argument naming `text` when it is not that. */
std::pair<std::string, uint16_t> parse_master(const std::string& text);
/** "127.0.0.1:PORT" with a port nobody listens on now: the master of ranks on this machine. */
std::string loopback_master();

class ProcessGroup final : public RankSum {
 public:
  /** Joins the group (waits up to the timeout for every rank); std::invalid_argument for a bad
   *  rank, world size or master. Gloo binds to $GLOO_SOCKET_IFNAME's address when set, to
   *  127.0.0.1 for a loopback master, else to the address of this machine's hostname. */
  explicit ProcessGroup(const ProcessGroupOptions& options);
  ~ProcessGroup() override;
  ProcessGroup(const ProcessGroup&) = delete;
  ProcessGroup& operator=(const ProcessGroup&) = delete;

  int rank() const;
  int size() const;

  void sum(std::vector<double>& values) override;
  /** Replaces each entry by its maximum over the ranks. */
  void max(std::vector<double>& values);
  /** Sums the gradients of `parameters` over the ranks (one message). A rank without a gradient
   *  for a parameter adds zeros; a parameter no rank has a gradient for keeps none, as it would in
   *  one process. */
  void sum_gradients(const std::vector<torch::Tensor>& parameters);
  /** Gives every rank rank 0's values of `tensors`. */
  void broadcast(const std::vector<torch::Tensor>& tensors);
  /** Every rank's `text`, in rank order, on rank 0; empty on the others. */
  std::vector<std::string> gather(const std::string& text);
  void barrier();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace turnrl::trainer
