// Scratch files of the fuzz targets: the readers take paths, so each input is written to a file
// first. One path per process (libFuzzer may run several), removed when the process ends.
#ifndef HPF_TESTS_FUZZ_SCRATCH_HPP
#define HPF_TESTS_FUZZ_SCRATCH_HPP

#include <cstddef>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include <unistd.h>

namespace hpf_fuzz {

/// `<temp dir>/<stem>_<pid><suffix>`, the same for the whole process, removed (with anything
/// under it) at exit. The temp dir follows TMPDIR (scripts/fuzz.sh points it at /dev/shm).
inline std::filesystem::path scratch_path(const std::string& stem, const std::string& suffix) {
  std::filesystem::path path =
      std::filesystem::temp_directory_path() / (stem + "_" + std::to_string(::getpid()) + suffix);
  static struct Remove {
    std::filesystem::path path;
    ~Remove() {
      std::error_code ec;
      if (!path.empty()) std::filesystem::remove_all(path, ec);
    }
  } remove_at_exit;
  remove_at_exit.path = path;
  return path;
}

/// Writes `size` bytes to `file`; aborts if the scratch directory fails (that is not the reader's
/// fault, and must not pass as one).
inline void write_scratch(const std::filesystem::path& file, const void* data, std::size_t size) {
  std::ofstream out(file, std::ios::binary | std::ios::trunc);
  out.write(static_cast<const char*>(data), static_cast<std::streamsize>(size));
  out.close();
  if (!out) std::abort();
}

}  // namespace hpf_fuzz

#endif  // HPF_TESTS_FUZZ_SCRATCH_HPP
