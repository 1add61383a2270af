#include "agents/model/safetensors.h"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <stdexcept>

#include <nlohmann/json.hpp>

namespace turnrl::agents {

DType parse_dtype(const std::string& name, const std::string& context) {
  if (name == "F32") return DType::kF32;
  if (name == "F16") return DType::kF16;
  if (name == "BF16") return DType::kBF16;
  throw std::runtime_error(context + ": unsupported dtype '" + name + "' (F32, F16, BF16)");
}

const char* dtype_name(DType dtype) {
  switch (dtype) {
    case DType::kF32:
      return "F32";
    case DType::kF16:
      return "F16";
    case DType::kBF16:
      return "BF16";
  }
  return "?";
}

size_t dtype_size(DType dtype) { return dtype == DType::kF32 ? 4 : 2; }

int64_t TensorView::numel() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

const TensorView& SafetensorsFile::at(const std::string& name) const {
  const auto found = tensors_.find(name);
  if (found == tensors_.end()) throw std::runtime_error(path_ + ": missing tensor '" + name + "'");
  return found->second;
}

SafetensorsFile SafetensorsFile::load(const std::string& path) {
  SafetensorsFile file;
  file.path_ = path;
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error(path + ": cannot open");
  file.bytes_.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  const std::vector<uint8_t>& bytes = file.bytes_;
  if (bytes.size() < 8) throw std::runtime_error(path + ": truncated (no header length)");
  uint64_t header_len = 0;
  for (int i = 7; i >= 0; --i) header_len = (header_len << 8) | bytes[i];
  if (header_len > bytes.size() - 8) {
    throw std::runtime_error(path + ": header length " + std::to_string(header_len) + " exceeds the file size");
  }
  nlohmann::json header;
  try {
    header = nlohmann::json::parse(bytes.begin() + 8, bytes.begin() + 8 + static_cast<long>(header_len));
  } catch (const nlohmann::json::exception& e) {  // parse_error, or out_of_range for 1e999
    throw std::runtime_error(path + ": header is not valid JSON: " + e.what());
  }
  if (!header.is_object()) throw std::runtime_error(path + ": header must be a JSON object");
  const size_t data_start = 8 + header_len;
  const size_t data_size = bytes.size() - data_start;
  for (const auto& [name, entry] : header.items()) {
    if (name == "__metadata__") continue;
    const std::string where = path + ": tensor '" + name + "'";
    if (!entry.is_object() || !entry.contains("dtype") || !entry.contains("shape") || !entry.contains("data_offsets") ||
        !entry["dtype"].is_string() || !entry["shape"].is_array() || !entry["data_offsets"].is_array() ||
        entry["data_offsets"].size() != 2) {
      throw std::runtime_error(where + ": malformed entry (needs dtype, shape, data_offsets[2])");
    }
    TensorView view;
    view.dtype = parse_dtype(entry["dtype"].get<std::string>(), where);
    uint64_t numel = 1;
    for (const auto& dim : entry["shape"]) {
      if (!dim.is_number_unsigned()) throw std::runtime_error(where + ": shape entries must be non-negative integers");
      const uint64_t d = dim.get<uint64_t>();
      // Each dimension too, not only the product: behind a zero one, a huge one would become negative.
      constexpr uint64_t kMaxElements = uint64_t{1} << 40;
      if (d > kMaxElements || (d != 0 && numel > kMaxElements / d)) throw std::runtime_error(where + ": shape is too large");
      numel *= d;
      view.shape.push_back(static_cast<int64_t>(d));
    }
    const auto& offsets = entry["data_offsets"];
    if (!offsets[0].is_number_unsigned() || !offsets[1].is_number_unsigned()) {
      throw std::runtime_error(where + ": data_offsets must be non-negative integers");
    }
    const uint64_t begin = offsets[0].get<uint64_t>(), end = offsets[1].get<uint64_t>();
    if (begin > end || end > data_size) {
      throw std::runtime_error(where + ": data_offsets [" + std::to_string(begin) + ", " + std::to_string(end) +
                               "] lie outside the " + std::to_string(data_size) + " data bytes (truncated file?)");
    }
    if (end - begin != numel * dtype_size(view.dtype)) {
      throw std::runtime_error(where + ": " + std::to_string(end - begin) + " bytes do not match shape and dtype (" +
                               std::to_string(numel * dtype_size(view.dtype)) + " expected)");
    }
    view.data = bytes.data() + data_start + begin;
    view.bytes = end - begin;
    file.tensors_.emplace(name, std::move(view));
  }
  return file;
}

void write_safetensors(const std::string& path, std::vector<TensorToWrite> tensors) {
  std::sort(tensors.begin(), tensors.end(), [](const auto& a, const auto& b) { return a.name < b.name; });
  nlohmann::ordered_json header;
  header["__metadata__"] = {{"format", "pt"}};
  uint64_t offset = 0;
  for (const auto& tensor : tensors) {
    int64_t numel = 1;
    for (int64_t d : tensor.shape) numel *= d;
    if (tensor.data.size() != static_cast<size_t>(numel) * dtype_size(tensor.dtype)) {
      throw std::invalid_argument("write_safetensors: tensor '" + tensor.name + "' has the wrong number of bytes");
    }
    header[tensor.name] = {{"dtype", dtype_name(tensor.dtype)}, {"shape", tensor.shape}, {"data_offsets", {offset, offset + tensor.data.size()}}};
    offset += tensor.data.size();
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');
  const std::string temp = path + ".tmp";
  {
    std::ofstream out(temp, std::ios::binary | std::ios::trunc);
    if (!out) throw std::runtime_error(temp + ": cannot write");
    uint64_t len = text.size();
    for (int i = 0; i < 8; ++i) out.put(static_cast<char>((len >> (8 * i)) & 0xFF));
    out.write(text.data(), static_cast<std::streamsize>(text.size()));
    for (const auto& tensor : tensors) out.write(reinterpret_cast<const char*>(tensor.data.data()), static_cast<std::streamsize>(tensor.data.size()));
    if (!out.flush()) throw std::runtime_error(temp + ": write failed");
  }
  if (std::rename(temp.c_str(), path.c_str()) != 0) throw std::runtime_error(path + ": cannot rename from " + temp);
}

}  // namespace turnrl::agents
