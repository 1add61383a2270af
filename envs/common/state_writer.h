#pragma once
// Builds the canonical byte string of an env state (Env::serialize_state): every field at a fixed
// width in little-endian order and every string and list length-prefixed (for a list the caller
// puts the count first), so two states give equal bytes exactly when their fields are equal.
#include <bit>
#include <concepts>
#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>

namespace turnrl::envs {

class StateWriter {
 public:
  /** Integers, enums and bools as 8 little-endian bytes (one width, so no field can alias another). */
  template <typename T>
    requires std::integral<T> || std::is_enum_v<T>
  void put(T value) {
    put_u64(static_cast<uint64_t>(static_cast<int64_t>(value)));
  }
  /** Doubles by their bit pattern: the state is equal only when the value is bit-identical. */
  void put(double value) { put_u64(std::bit_cast<uint64_t>(value)); }
  void put(std::string_view text) {
    put(text.size());
    bytes_.append(text);
  }
  std::string take() { return std::move(bytes_); }

 private:
  void put_u64(uint64_t value) {
    for (int i = 0; i < 8; ++i) bytes_.push_back(static_cast<char>((value >> (8 * i)) & 0xFF));
  }

  std::string bytes_;
};

}  // namespace turnrl::envs
