// SPDX-License-Identifier: MIT
#ifndef HPF_DATA_IDX_HPP
#define HPF_DATA_IDX_HPP

#include <hpf/data/error.hpp>

#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <limits>
#include <stdexcept>
#include <string>
#include <system_error>
#include <vector>

namespace hpf::data {

/// \brief Contents of an IDX file (the MNIST format, http://yann.lecun.com/exdb/mnist/): the
/// file's dimensions (`dims[0]` items of `dims[1] x ... ` bytes each) and the bytes of the items
/// that were read, in file order.
struct IdxArray {
  std::vector<std::size_t> dims;
  std::vector<std::uint8_t> bytes;

  /// Number of items in the file (`dims[0]`).
  std::size_t items() const noexcept { return dims.empty() ? 0 : dims[0]; }
  /// Bytes per item (product of `dims[1..]`; 1 for a rank-1 file such as labels).
  std::size_t item_bytes() const noexcept {
    std::size_t n = 1;
    for (std::size_t k = 1; k < dims.size(); ++k) n *= dims[k];
    return n;
  }
};

namespace detail {

// Reads through zlib, which passes uncompressed files through unchanged.
class GzReader {
 public:
  explicit GzReader(const std::filesystem::path& file) : file_(file) {
    errno = 0;
    handle_ = gzopen(file.c_str(), "rb");
    if (handle_ == nullptr) {
      const int err = errno;
      throw DataError(file, std::string("cannot open: ") +
                                (err != 0 ? std::strerror(err) : "zlib could not allocate its state"));
    }
    gzbuffer(handle_, 1u << 18);  // fewer read() calls than zlib's 8 KiB default
  }
  GzReader(const GzReader&) = delete;
  GzReader& operator=(const GzReader&) = delete;
  ~GzReader() { gzclose(handle_); }

  const std::filesystem::path& file() const noexcept { return file_; }
  /// True once zlib has found the gzip stream cut short (the data ends early).
  bool stream_cut() const noexcept { return stream_cut_; }

  /// Reads up to n bytes and returns how many it got (fewer only at the end of the data);
  /// throws on a read error or corrupt compressed data.
  std::size_t read(std::uint8_t* dst, std::size_t n) {
    std::size_t done = 0;
    while (done < n) {
      const auto want = static_cast<unsigned>(std::min<std::size_t>(n - done, 1u << 30));
      const int got = gzread(handle_, dst + done, want);
      if (got > 0) done += static_cast<std::size_t>(got);
      if (got < static_cast<int>(want)) {
        check_stream(got < 0);
        break;
      }
    }
    return done;
  }

  /// Reads past the data so that zlib reaches the gzip trailer and verifies its CRC and length
  /// (a corrupt stored block decodes without error; only the CRC exposes it).
  void finish() {
    std::uint8_t extra = 0;
    read(&extra, 1);
    if (stream_cut_) throw DataError(file_, "truncated gzip stream (zlib: unexpected end of file)");
  }

 private:
  void check_stream(bool failed) {
    int code = Z_OK;
    std::string message = gzerror(handle_, &code);
    if (code == Z_BUF_ERROR) {  // gzip stream ends early: the caller reports what is missing
      stream_cut_ = true;
      return;
    }
    if (code == Z_OK && !failed) return;  // plain end of file
    // zlib prefixes its message with the path as given; ours already names the file.
    const std::string prefix = file_.string() + ": ";
    if (message.rfind(prefix, 0) == 0) message.erase(0, prefix.size());
    throw DataError(file_, "unreadable or corrupt gzip data (zlib: " + message + ")");
  }

  std::filesystem::path file_;
  gzFile handle_ = nullptr;
  bool stream_cut_ = false;
};

inline std::string hex(std::uint32_t value, int digits) {
  char text[16];
  std::snprintf(text, sizeof text, "0x%0*X", digits, static_cast<unsigned>(value));
  return text;
}

inline const char* idx_type_name(std::uint8_t code) noexcept {
  switch (code) {
    case 0x08: return "unsigned byte";
    case 0x09: return "signed byte";
    case 0x0B: return "int16";
    case 0x0C: return "int32";
    case 0x0D: return "float32";
    case 0x0E: return "float64";
    default: return "not an IDX type";
  }
}

inline std::string dims_text(const std::vector<std::size_t>& dims) {
  std::string text;
  for (std::size_t d : dims) text += (text.empty() ? "" : " x ") + std::to_string(d);
  return text;
}

// Reads exactly n bytes or throws naming what was expected.
inline void read_exactly(GzReader& in, std::uint8_t* dst, std::size_t n, std::size_t already,
                         std::size_t total, const char* what) {
  const std::size_t got = in.read(dst, n);
  if (got == n) return;
  throw DataError(in.file(), std::string("truncated: expected ") + std::to_string(total) + " bytes of " +
                                 what + ", file holds " + std::to_string(already + got) +
                                 (in.stream_cut() ? " (zlib: unexpected end of file)" : ""));
}

inline IdxArray read_idx_header(GzReader& in) {
  std::uint8_t magic[4];
  read_exactly(in, magic, 4, 0, 4, "header");
  const std::uint32_t value = (std::uint32_t{magic[0]} << 24) | (std::uint32_t{magic[1]} << 16) |
                              (std::uint32_t{magic[2]} << 8) | magic[3];
  if (magic[0] != 0 || magic[1] != 0) {
    throw DataError(in.file(), "bad magic number " + hex(value, 8) +
                                   " (an IDX file starts with 0x0000, a type code and a rank)");
  }
  if (magic[2] != 0x08) {
    throw DataError(in.file(), "unsupported IDX type code " + hex(magic[2], 2) + " (" +
                                   idx_type_name(magic[2]) +
                                   "); only 0x08 (unsigned byte) is supported");
  }
  const std::size_t rank = magic[3];
  if (rank == 0) throw DataError(in.file(), "IDX header declares zero dimensions");
  std::vector<std::uint8_t> raw(4 * rank);
  read_exactly(in, raw.data(), raw.size(), 4, 4 + raw.size(), "header");
  IdxArray array;
  array.dims.resize(rank);
  for (std::size_t k = 0; k < rank; ++k) {
    const std::uint8_t* p = &raw[4 * k];
    array.dims[k] = (std::size_t{p[0]} << 24) | (std::size_t{p[1]} << 16) | (std::size_t{p[2]} << 8) | p[3];
  }
  std::size_t total = 1;
  for (std::size_t k = 0; k < rank; ++k) {
    if (array.dims[k] == 0) {
      throw DataError(in.file(), "dimension " + std::to_string(k) + " of " + dims_text(array.dims) + " is zero");
    }
    if (total > std::numeric_limits<std::size_t>::max() / array.dims[k]) {
      throw DataError(in.file(), "dimensions " + dims_text(array.dims) + " describe more data than can be addressed");
    }
    total *= array.dims[k];
  }
  return array;
}

}  // namespace detail

/// Reads only the header of an IDX file (`bytes` stays empty): cheap, for processes that need a
/// dataset's size but not its contents.
inline IdxArray read_idx_header(const std::filesystem::path& file) {
  detail::GzReader in(file);
  return detail::read_idx_header(in);
}

/// \brief Reads an IDX file of unsigned bytes, gzip-compressed or not, keeping the items i with
/// `i % stride == offset` (all by default). Throws DataError naming the file on a missing file,
/// bad magic number, unsupported type, zero dimension, truncated data or corrupt gzip stream.
/// The data is read in chunks, so a corrupt header cannot make it allocate more than the file holds.
inline IdxArray read_idx(const std::filesystem::path& file, std::size_t stride = 1, std::size_t offset = 0) {
  if (stride == 0 || offset >= stride) {
    throw std::invalid_argument("hpf::data::read_idx: offset " + std::to_string(offset) +
                                " is not below stride " + std::to_string(stride));
  }
  detail::GzReader in(file);
  IdxArray array = detail::read_idx_header(in);
  const std::size_t item = array.item_bytes();
  const std::size_t data_bytes = array.items() * item;
  const std::size_t kept = array.items() > offset ? (array.items() - offset + stride - 1) / stride : 0;
  // Reserve no more than the file can hold (deflate expands at most ~1032:1), so a corrupt
  // header cannot trigger a huge allocation; the data itself is read in fixed-size chunks.
  std::error_code ec;
  const std::uintmax_t file_bytes = std::filesystem::file_size(file, ec);
  if (!ec) array.bytes.reserve(static_cast<std::size_t>(std::min<std::uintmax_t>(kept * item, 1032 * file_bytes)));

  constexpr std::size_t chunk_bytes = std::size_t{1} << 20;
  std::vector<std::uint8_t> chunk;
  for (std::size_t done = 0; done < data_bytes; done += chunk_bytes) {
    const std::size_t want = std::min(chunk_bytes, data_bytes - done);
    if (stride == 1) {  // straight into the result
      array.bytes.resize(done + want);
      detail::read_exactly(in, array.bytes.data() + done, want, done, data_bytes, "data");
      continue;
    }
    chunk.resize(want);
    detail::read_exactly(in, chunk.data(), want, done, data_bytes, "data");
    for (std::size_t at = done; at < done + want;) {  // the parts of kept items in this chunk
      const std::size_t index = at / item, end = std::min((index + 1) * item, done + want);
      if (index % stride == offset) {
        array.bytes.insert(array.bytes.end(), chunk.data() + (at - done), chunk.data() + (end - done));
      }
      at = end;
    }
  }
  in.finish();
  return array;
}

}  // namespace hpf::data

#endif  // HPF_DATA_IDX_HPP
