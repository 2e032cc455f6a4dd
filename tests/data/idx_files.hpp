// Helpers for the data tests: a scratch directory and small IDX files, raw or gzip-compressed.
#ifndef HPF_TESTS_DATA_IDX_FILES_HPP
#define HPF_TESTS_DATA_IDX_FILES_HPP

#include <zlib.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <string>
#include <vector>

#include <unistd.h>

namespace hpf_test {

/// A fresh directory under the system's temp directory, removed with its contents at scope exit.
class TempDir {
 public:
  TempDir() {
    static int counter = 0;
    path_ = std::filesystem::temp_directory_path() /
            ("hpf_data_test_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  std::filesystem::path operator/(const std::string& name) const { return path_ / name; }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

/// The bytes of an IDX file: magic (0, 0, type, rank), big-endian dims, then `data`.
inline std::vector<std::uint8_t> idx_bytes(const std::vector<std::uint32_t>& dims, const std::vector<std::uint8_t>& data,
                                           std::uint8_t type = 0x08) {
  std::vector<std::uint8_t> bytes{0, 0, type, static_cast<std::uint8_t>(dims.size())};
  for (std::uint32_t d : dims) {
    for (int shift = 24; shift >= 0; shift -= 8) bytes.push_back(static_cast<std::uint8_t>(d >> shift));
  }
  bytes.insert(bytes.end(), data.begin(), data.end());
  return bytes;
}

/// n bytes following a simple deterministic pattern (compressible, so gzip uses Huffman blocks).
inline std::vector<std::uint8_t> pattern(std::size_t n, std::size_t modulus = 256) {
  std::vector<std::uint8_t> data(n);
  for (std::size_t i = 0; i < n; ++i) data[i] = static_cast<std::uint8_t>((i * 7 + i / 13) % modulus);
  return data;
}

inline void write_raw(const std::filesystem::path& file, const std::vector<std::uint8_t>& bytes) {
  std::ofstream out(file, std::ios::binary);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  if (!out) throw std::runtime_error("cannot write " + file.string());
}

inline void write_gz(const std::filesystem::path& file, const std::vector<std::uint8_t>& bytes) {
  gzFile out = gzopen(file.c_str(), "wb9");
  if (out == nullptr) throw std::runtime_error("cannot open " + file.string());
  const int written = gzwrite(out, bytes.data(), static_cast<unsigned>(bytes.size()));
  if (gzclose(out) != Z_OK || written != static_cast<int>(bytes.size())) {
    throw std::runtime_error("cannot write " + file.string());
  }
}

inline std::vector<std::uint8_t> read_raw(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

/// Writes `bytes` gzip-compressed to `file` after `damage` has edited the compressed bytes.
template <class Damage>
void write_damaged_gz(const std::filesystem::path& file, const std::vector<std::uint8_t>& bytes, Damage damage) {
  write_gz(file, bytes);
  auto gz = read_raw(file);
  damage(gz);
  write_raw(file, gz);
}

/// True if `text` contains `part` (for checking error messages).
inline bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

/// The message of the exception `f()` throws as E (empty if it throws nothing).
template <class E = std::exception, class F>
std::string message_of(F&& f) {
  try {
    f();
  } catch (const E& e) {
    return e.what();
  }
  return {};
}

}  // namespace hpf_test

#endif  // HPF_TESTS_DATA_IDX_FILES_HPP
