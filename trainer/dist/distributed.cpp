#include "trainer/dist/distributed.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <stdexcept>

// libtorch's CMake targets define USE_C10D_GLOO, and USE_C10D_NCCL where it was built with NCCL.
#ifndef USE_C10D_GLOO
#error "this libtorch has no Gloo backend (USE_C10D_GLOO), which data-parallel training needs"
#endif
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>
#include <torch/version.h>
#ifdef USE_C10D_NCCL
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>
#endif

namespace turnrl::trainer {
namespace {

bool is_loopback(const std::string& host) { return host == "localhost" || host.starts_with("127.") || host == "::1"; }

std::shared_ptr<::gloo::transport::Device> gloo_device(const std::string& master_host) {
  if (const char* interface = std::getenv("GLOO_SOCKET_IFNAME"); interface && *interface) {
    return c10d::ProcessGroupGloo::createDeviceForInterface(interface);
  }
  if (is_loopback(master_host)) return c10d::ProcessGroupGloo::createDeviceForHostname("127.0.0.1");
  return c10d::ProcessGroupGloo::createDefaultDevice();
}

}  // namespace

std::pair<std::string, uint16_t> parse_master(const std::string& text) {
  const size_t colon = text.rfind(':');
  const auto bad = [&] { return std::invalid_argument("--master '" + text + "': expected HOST:PORT (PORT 1..65535)"); };
  if (colon == std::string::npos || colon == 0 || colon + 1 == text.size()) throw bad();
  const std::string digits = text.substr(colon + 1);
  if (digits.find_first_not_of("0123456789") != std::string::npos || digits.size() > 5) throw bad();
  const int port = std::stoi(digits);
  if (port < 1 || port > 65535) throw bad();
  std::string host = text.substr(0, colon);
  if (host.size() > 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);  // [IPv6]
  return {host, static_cast<uint16_t>(port)};
}

std::string loopback_master() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) throw std::runtime_error(std::string("socket: ") + std::strerror(errno));
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof address;
  const bool bound = bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0 &&
                     getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) == 0;
  const std::string error = std::strerror(errno);
  close(fd);
  if (!bound) throw std::runtime_error("no free loopback port: " + error);
  return "127.0.0.1:" + std::to_string(ntohs(address.sin_port));
}

struct ProcessGroup::Impl {
  int rank = 0, size = 1;
  c10::intrusive_ptr<c10d::Store> store;
  c10::intrusive_ptr<c10d::ProcessGroupGloo> gloo;
#ifdef USE_C10D_NCCL
  c10::intrusive_ptr<c10d::ProcessGroupNCCL> nccl;  // set when CUDA is there
#endif
  uint64_t gathers = 0;  // store keys of gather() calls

  /** In place; CUDA tensors through NCCL where built, else through a CPU copy. */
  void all_reduce(torch::Tensor& tensor, c10d::ReduceOp op) {
    c10d::AllreduceOptions options;
    options.reduceOp = op;
#ifdef USE_C10D_NCCL
    if (tensor.is_cuda() && nccl) {
      std::vector<torch::Tensor> tensors{tensor};
      nccl->allreduce(tensors, options)->wait();
      return;
    }
#endif
    std::vector<torch::Tensor> tensors{tensor.is_cuda() ? tensor.cpu() : tensor};
    gloo->allreduce(tensors, options)->wait();
    if (tensor.is_cuda()) tensor.copy_(tensors[0]);
  }

  void reduce_doubles(std::vector<double>& values, c10d::ReduceOp op) {
    if (values.empty()) return;
    torch::Tensor tensor = torch::tensor(values, torch::kFloat64);
    all_reduce(tensor, op);
    const double* data = tensor.data_ptr<double>();
    values.assign(data, data + values.size());
  }
};

ProcessGroup::ProcessGroup(const ProcessGroupOptions& options) : impl_(std::make_unique<Impl>()) {
  if (options.world_size < 1) throw std::invalid_argument("world size must be >= 1, got " + std::to_string(options.world_size));
  if (options.rank < 0 || options.rank >= options.world_size) {
    throw std::invalid_argument("rank " + std::to_string(options.rank) + " is not in 0.." + std::to_string(options.world_size - 1));
  }
  const auto [host, port] = parse_master(options.master);
  impl_->rank = options.rank;
  impl_->size = options.world_size;
  c10d::TCPStoreOptions store;
  store.port = port;
  store.isServer = options.rank == 0;
  store.numWorkers = options.world_size;
  store.waitWorkers = true;
  store.timeout = options.timeout;
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 2)
  // libtorch 2.4+ asks for the libuv store by default; Debian 13's is built without libuv.
  store.useLibUV = false;
#endif
  impl_->store = c10::make_intrusive<c10d::TCPStore>(host, store);
  auto gloo = c10d::ProcessGroupGloo::Options::create(options.timeout);
  gloo->devices.push_back(gloo_device(host));
  impl_->gloo = c10::make_intrusive<c10d::ProcessGroupGloo>(c10::make_intrusive<c10d::PrefixStore>("gloo", impl_->store),
                                                            options.rank, options.world_size, gloo);
#ifdef USE_C10D_NCCL
  // NCCL refuses two ranks on one GPU: with more ranks than GPUs (rank R on GPU R mod count), CUDA
  // tensors go through Gloo by way of CPU copies instead.
  if (torch::cuda::is_available() && static_cast<int>(torch::cuda::device_count()) >= options.world_size) {
    auto nccl = c10d::ProcessGroupNCCL::Options::create();
    nccl->timeout = options.timeout;
    impl_->nccl = c10::make_intrusive<c10d::ProcessGroupNCCL>(c10::make_intrusive<c10d::PrefixStore>("nccl", impl_->store),
                                                              options.rank, options.world_size, nccl);
  }
#endif
}

ProcessGroup::~ProcessGroup() = default;

int ProcessGroup::rank() const { return impl_->rank; }
int ProcessGroup::size() const { return impl_->size; }

void ProcessGroup::sum(std::vector<double>& values) { impl_->reduce_doubles(values, c10d::ReduceOp::SUM); }
void ProcessGroup::max(std::vector<double>& values) { impl_->reduce_doubles(values, c10d::ReduceOp::MAX); }

void ProcessGroup::sum_gradients(const std::vector<torch::Tensor>& parameters) {
  if (parameters.empty()) return;
  torch::NoGradGuard no_grad;
  const torch::TensorOptions options = torch::TensorOptions().dtype(torch::kFloat32).device(parameters.front().device());
  std::vector<torch::Tensor> pieces;
  torch::Tensor has_gradient = torch::zeros({static_cast<int64_t>(parameters.size())}, options);
  for (size_t i = 0; i < parameters.size(); ++i) {
    const torch::Tensor& grad = parameters[i].grad();
    if (grad.defined()) has_gradient[static_cast<int64_t>(i)] = 1.0f;
    pieces.push_back(grad.defined() ? grad.reshape(-1).to(torch::kFloat32) : torch::zeros({parameters[i].numel()}, options));
  }
  pieces.push_back(has_gradient);
  torch::Tensor flat = torch::cat(pieces);
  impl_->all_reduce(flat, c10d::ReduceOp::SUM);
  const torch::Tensor ranks_with_gradient = flat.narrow(0, flat.numel() - has_gradient.numel(), has_gradient.numel()).cpu();
  int64_t offset = 0;
  for (size_t i = 0; i < parameters.size(); ++i) {
    torch::Tensor parameter = parameters[i];
    const int64_t n = parameter.numel();
    if (ranks_with_gradient[static_cast<int64_t>(i)].item<float>() > 0) {
      const torch::Tensor summed = flat.narrow(0, offset, n).view(parameter.sizes()).to(parameter.scalar_type());
      if (parameter.grad().defined()) {
        parameter.mutable_grad().copy_(summed);
      } else {
        parameter.mutable_grad() = summed.clone();
      }
    }
    offset += n;
  }
}

void ProcessGroup::broadcast(const std::vector<torch::Tensor>& tensors) {
  if (tensors.empty()) return;
  torch::NoGradGuard no_grad;
  std::vector<torch::Tensor> pieces;
  for (const torch::Tensor& t : tensors) pieces.push_back(t.detach().reshape(-1).to(torch::kCPU, torch::kFloat32));
  std::vector<torch::Tensor> flat{torch::cat(pieces)};
  impl_->gloo->broadcast(flat)->wait();
  int64_t offset = 0;
  for (const torch::Tensor& t : tensors) {
    torch::Tensor target = t;
    target.copy_(flat[0].narrow(0, offset, t.numel()).view(t.sizes()));
    offset += t.numel();
  }
}

std::vector<std::string> ProcessGroup::gather(const std::string& text) {
  const std::string prefix = "gather/" + std::to_string(impl_->gathers++) + "/";
  if (impl_->rank != 0) {
    impl_->store->set(prefix + std::to_string(impl_->rank), std::vector<uint8_t>(text.begin(), text.end()));
    return {};
  }
  std::vector<std::string> texts{text};
  for (int r = 1; r < impl_->size; ++r) {
    const std::string key = prefix + std::to_string(r);
    const std::vector<uint8_t> bytes = impl_->store->get(key);  // waits for rank r
    texts.emplace_back(bytes.begin(), bytes.end());
    impl_->store->deleteKey(key);
  }
  return texts;
}

void ProcessGroup::barrier() { impl_->gloo->barrier()->wait(); }

}  // namespace turnrl::trainer
