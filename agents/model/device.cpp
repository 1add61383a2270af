#include "agents/model/device.h"

#include <stdexcept>

namespace turnrl::agents {

torch::Device resolve_device(const std::string& name, int rank) {
  torch::Device device(torch::kCPU);
  try {
    device = torch::Device(name);
  } catch (const std::exception&) {
    throw std::invalid_argument("device '" + name + "': expected cpu, cuda or cuda:N");
  }
  if (!device.is_cuda()) return device;
  // Without this check a CPU-only libtorch fails deep inside the first tensor move, naming no option.
  if (!torch::cuda::is_available()) {
    throw std::invalid_argument("device '" + name + "': this libtorch has no CUDA or no GPU is visible (build against a CUDA "
                                "libtorch, e.g. PyTorch's: docs/builds.md)");
  }
  const int count = static_cast<int>(torch::cuda::device_count());
  if (!device.has_index()) return torch::Device(torch::kCUDA, static_cast<c10::DeviceIndex>(rank % count));
  if (device.index() >= count) {
    throw std::invalid_argument("device '" + name + "': only " + std::to_string(count) + " GPU(s) visible");
  }
  return device;
}

}  // namespace turnrl::agents
