#pragma once
// What the fuzz targets share: a property check that stops the run (libFuzzer saves the input),
// and the input as a file for the readers that take a path.
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

namespace turnrl::fuzz {

/** A broken property is a finding: report it and abort, which libFuzzer records as a crash. */
inline void check(bool ok, const char* property) {
  if (ok) return;
  std::fprintf(stderr, "fuzz property failed: %s\n", property);
  std::abort();
}

/** Writes `data` to this process's scratch file (one per target and process, so parallel jobs
 *  do not collide) and returns its path. */
inline std::string write_input_file(const char* target, const uint8_t* data, size_t size) {
  const char* dir = std::getenv("TMPDIR");
  const std::string path = std::string(dir ? dir : "/tmp") + "/turnrl_fuzz_" + target + "_" + std::to_string(getpid());
  std::ofstream(path, std::ios::binary | std::ios::trunc).write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  return path;
}

}  // namespace turnrl::fuzz
