#pragma once
// A test's own scratch folder: uniquely named under the system's temporary folder ($TMPDIR), so that
// tests running at once (ctest -j, another checkout's ctest) never share a path, and removed with
// its contents when it goes out of scope.
#include <cstdlib>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <system_error>

namespace turnrl::test {

class TempDir {
 public:
  /** `name` starts the folder's name, so that a folder left by a killed test says whose it was. */
  explicit TempDir(const std::string& name = "turnrl_test") {
    std::string pattern = (std::filesystem::temp_directory_path() / (name + "_XXXXXX")).string();
    if (!mkdtemp(pattern.data())) throw std::runtime_error("cannot make a temporary folder " + pattern);
    path_ = pattern;
  }
  ~TempDir() {
    std::error_code ignored;  // a destructor must not throw; a folder left behind is harmless
    std::filesystem::remove_all(path_, ignored);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::string& path() const { return path_; }
  /** The path of `relative` inside the folder. */
  std::string operator/(const std::string& relative) const { return path_ + "/" + relative; }

 private:
  std::string path_;
};

}  // namespace turnrl::test
