// Fuzzes the safetensors reader with arbitrary file bytes. std::runtime_error (naming the file) is
// the clean rejection. A file it accepts must describe every tensor within the file, with as many
// bytes as shape and dtype say, and must read back the same after write_safetensors.
#include <algorithm>
#include <stdexcept>
#include <string>
#include <vector>

#include "agents/model/safetensors.h"
#include "fuzz_util.h"

using namespace turnrl;
using turnrl::fuzz::check;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = fuzz::write_input_file("safetensors", data, size);
  std::vector<agents::TensorToWrite> copies;
  try {
    const agents::SafetensorsFile file = agents::SafetensorsFile::load(path);
    for (const auto& [name, view] : file.tensors()) {
      for (int64_t d : view.shape) check(d >= 0, "shape entries are non-negative");
      check(view.numel() >= 0 && static_cast<uint64_t>(view.numel()) * agents::dtype_size(view.dtype) == view.bytes,
            "bytes match shape and dtype");
      // Reads every byte, so that AddressSanitizer checks the view lies inside the file.
      std::vector<uint8_t> bytes(view.data, view.data + view.bytes);
      copies.push_back({name, view.dtype, view.shape, std::move(bytes)});
    }
  } catch (const std::runtime_error&) {
    return 0;
  }
  agents::write_safetensors(path, copies);
  const agents::SafetensorsFile again = agents::SafetensorsFile::load(path);
  check(again.tensors().size() == copies.size(), "every tensor is written back");
  for (const agents::TensorToWrite& tensor : copies) {
    const agents::TensorView& view = again.at(tensor.name);
    check(view.dtype == tensor.dtype && view.shape == tensor.shape && view.bytes == tensor.data.size() &&
              std::equal(tensor.data.begin(), tensor.data.end(), view.data),
          "a tensor reads back as written");
  }
  return 0;
}
