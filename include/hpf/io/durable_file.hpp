// SPDX-License-Identifier: MIT
#ifndef HPF_IO_DURABLE_FILE_HPP
#define HPF_IO_DURABLE_FILE_HPP

#include <hpf/io/safetensors.hpp>

#include <zlib.h>

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <span>
#include <string>
#include <vector>

/// Files that survive a crash: written and flushed to the disk before anything points at them,
/// and checked by a CRC-32 when read back.
namespace hpf::io {

/// What was written: size and CRC-32 (zlib's, as `zlib.crc32` in Python computes it).
struct FileDigest {
  std::uint64_t bytes = 0;
  std::uint32_t crc32 = 0;
};

inline std::uint32_t crc32_of(std::span<const std::byte> bytes, std::uint32_t crc = 0) {
  uLong c = crc;
  while (!bytes.empty()) {
    const std::size_t n = std::min<std::size_t>(bytes.size(), std::size_t{1} << 30);
    c = ::crc32(c, reinterpret_cast<const Bytef*>(bytes.data()), static_cast<uInt>(n));
    bytes = bytes.subspan(n);
  }
  return static_cast<std::uint32_t>(c);
}

/// Creates `file` with `bytes` and forces them to the disk (fsync) before returning; throws
/// FormatError naming the file on any failure. The caller publishes it afterwards (a rename).
inline FileDigest write_synced(const std::filesystem::path& file, std::span<const std::byte> bytes) {
  const int fd = ::open(file.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) throw FormatError(file, std::string("cannot create: ") + std::strerror(errno));
  std::size_t done = 0;
  while (done < bytes.size()) {
    const ::ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const std::string why = std::strerror(errno);
      ::close(fd);
      throw FormatError(file, "writing " + std::to_string(bytes.size()) + " bytes failed: " + why);
    }
    done += static_cast<std::size_t>(n);
  }
  if (::fsync(fd) != 0 || ::close(fd) != 0) throw FormatError(file, std::string("cannot flush to disk: ") + std::strerror(errno));
  return {bytes.size(), crc32_of(bytes)};
}
inline FileDigest write_synced(const std::filesystem::path& file, const std::string& text) {
  return write_synced(file, std::as_bytes(std::span<const char>(text.data(), text.size())));
}

/// Flushes a directory's entries (new files, renames) to the disk.
inline void sync_directory(const std::filesystem::path& directory) {
  const int fd = ::open(directory.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) throw FormatError(directory, std::string("cannot open the directory: ") + std::strerror(errno));
  const int synced = ::fsync(fd);
  ::close(fd);
  if (synced != 0) throw FormatError(directory, std::string("cannot flush the directory: ") + std::strerror(errno));
}

/// Size and CRC-32 of a file, read in pieces (never whole into memory).
inline FileDigest digest_of_file(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) throw FormatError(file, std::string("cannot open: ") + std::strerror(errno));
  FileDigest d;
  std::vector<std::byte> piece(std::size_t{1} << 20);
  while (in) {
    in.read(reinterpret_cast<char*>(piece.data()), static_cast<std::streamsize>(piece.size()));
    const auto n = static_cast<std::size_t>(in.gcount());
    d.crc32 = crc32_of(std::span<const std::byte>(piece.data(), n), d.crc32);
    d.bytes += n;
  }
  if (in.bad()) throw FormatError(file, "read error");
  return d;
}

}  // namespace hpf::io

#endif  // HPF_IO_DURABLE_FILE_HPP
