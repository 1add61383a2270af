#pragma once
// The safetensors file format, read and written without libtorch: every offset, size and shape
// in the header is checked against the file before any tensor byte is touched.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace turnrl::agents {

enum class DType { kF32, kF16, kBF16 };

/** "F32", "F16", "BF16"; throws std::runtime_error for anything else. */
DType parse_dtype(const std::string& name, const std::string& context);
const char* dtype_name(DType dtype);
size_t dtype_size(DType dtype);

struct TensorView {
  DType dtype = DType::kF32;
  std::vector<int64_t> shape;
  const uint8_t* data = nullptr;  // points into the owning SafetensorsFile
  size_t bytes = 0;
  int64_t numel() const;
};

/** One loaded .safetensors file (the whole file in memory). */
class SafetensorsFile {
 public:
  /** Throws std::runtime_error naming the file (and tensor) on any inconsistency. */
  static SafetensorsFile load(const std::string& path);

  const std::string& path() const { return path_; }
  const std::map<std::string, TensorView>& tensors() const { return tensors_; }
  bool contains(const std::string& name) const { return tensors_.count(name) != 0; }
  /** Throws std::runtime_error naming the file and tensor when absent. */
  const TensorView& at(const std::string& name) const;

 private:
  std::string path_;
  std::vector<uint8_t> bytes_;
  std::map<std::string, TensorView> tensors_;
};

struct TensorToWrite {
  std::string name;
  DType dtype = DType::kF32;
  std::vector<int64_t> shape;
  std::vector<uint8_t> data;
};

/** Writes tensors (sorted by name, header padded to 8 bytes) to `path` via a temporary file and rename. */
void write_safetensors(const std::string& path, std::vector<TensorToWrite> tensors);

}  // namespace turnrl::agents
