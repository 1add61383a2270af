#pragma once
// SHA-256 (FIPS 180-4), used to fingerprint maps the way the Python references hash them.
#include <cstddef>
#include <cstdint>
#include <string>

namespace turnrl::envs {

/** Lower-case hex digest of `size` bytes at `data`. */
std::string sha256_hex(const uint8_t* data, size_t size);

}  // namespace turnrl::envs
