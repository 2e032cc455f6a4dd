// SPDX-License-Identifier: MIT
#ifndef HPF_DATA_NPY_HPP
#define HPF_DATA_NPY_HPP

#include <hpf/data/error.hpp>

#include <algorithm>
#include <array>
#include <bit>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <limits>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace hpf::data {

/// Element types of the .npy files hpf reads (numpy's little-endian dtypes of those names).
enum class NpyType { float32, float64, int8, int16, int32, int64, uint8, uint16, uint32, uint64, bool8 };

/// \brief The header of a .npy file (https://numpy.org/doc/stable/reference/generated/numpy.lib.format.html):
/// a C-order array of `shape` little-endian elements of `type`, whose data starts at byte
/// `data_offset` and runs to the end of the file.
struct NpyHeader {
  std::string descr;  ///< the dtype as the file spells it, e.g. "<f4"
  NpyType type = NpyType::float32;
  std::size_t item_size = 4;          ///< bytes per element
  std::vector<std::size_t> shape;     ///< empty for a 0-d array (one element)
  std::size_t data_offset = 0;        ///< bytes before the data (magic, version, length, header text)
  int major_version = 1;              ///< format version 1, 2 or 3 (minor always 0)

  /// Items along the first axis: the samples of a dataset file (1 for a 0-d array).
  std::size_t rows() const noexcept { return shape.empty() ? 1 : shape[0]; }
  /// Elements per row (product of `shape[1..]`; 1 for a 1-D array such as labels).
  std::size_t row_elements() const noexcept {
    std::size_t n = 1;
    for (std::size_t k = 1; k < shape.size(); ++k) n *= shape[k];
    return n;
  }
  /// True for float32 and float64.
  bool is_float() const noexcept { return type == NpyType::float32 || type == NpyType::float64; }
};

/// Rows of a .npy file that were read, converted to T, in file order (`values[k * row_elements + e]`).
template <class T>
struct NpyArray {
  NpyHeader header;
  std::vector<T> values;
};

namespace detail {

// A .npy file opened for positional reads (pread): rows are reached by offset, so a shard reads
// its own rows and no others, and no stream position is shared between readers.
class NpyFile {
 public:
  explicit NpyFile(const std::filesystem::path& file) : file_(file) {
    fd_ = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd_ < 0) throw DataError(file, std::string("cannot open: ") + std::strerror(errno));
    struct stat st {};
    if (::fstat(fd_, &st) != 0) {
      const int err = errno;
      ::close(fd_);
      throw DataError(file, std::string("cannot stat: ") + std::strerror(err));
    }
    if (!S_ISREG(st.st_mode)) {
      ::close(fd_);
      throw DataError(file, "not a regular file (a .npy file is expected)");
    }
    size_ = static_cast<std::uint64_t>(st.st_size);
  }
  NpyFile(const NpyFile&) = delete;
  NpyFile& operator=(const NpyFile&) = delete;
  ~NpyFile() { ::close(fd_); }

  const std::filesystem::path& file() const noexcept { return file_; }
  std::uint64_t size() const noexcept { return size_; }

  // Reads up to n bytes at `offset`; returns how many it got (fewer only at the end of the file).
  std::size_t read_at(std::uint64_t offset, void* dst, std::size_t n) const {
    std::size_t done = 0;
    while (done < n) {
      const ::ssize_t got = ::pread(fd_, static_cast<char*>(dst) + done, std::min<std::size_t>(n - done, 1u << 30),
                                    static_cast<::off_t>(offset + done));
      if (got < 0 && errno == EINTR) continue;
      if (got < 0) throw DataError(file_, std::string("read error: ") + std::strerror(errno));
      if (got == 0) break;
      done += static_cast<std::size_t>(got);
    }
    return done;
  }
  // Reads exactly n bytes at `offset`; the header said they are there, so fewer means the file
  // changed (or shrank) since.
  void read_exactly(std::uint64_t offset, void* dst, std::size_t n) const {
    const std::size_t got = read_at(offset, dst, n);
    if (got != n) {
      throw DataError(file_, "truncated: expected " + std::to_string(n) + " bytes at offset " + std::to_string(offset) +
                                 ", read " + std::to_string(got) + " (did the file change while it was read?)");
    }
  }

 private:
  std::filesystem::path file_;
  int fd_ = -1;
  std::uint64_t size_ = 0;
};

struct NpyDtype {
  const char* descr;
  NpyType type;
  std::size_t size;
  const char* name;
};
// '|' (not applicable) is how numpy writes one-byte types; '<' is accepted for them too.
inline constexpr NpyDtype npy_dtypes[] = {
    {"<f4", NpyType::float32, 4, "float32"}, {"<f8", NpyType::float64, 8, "float64"},
    {"|i1", NpyType::int8, 1, "int8"},       {"<i1", NpyType::int8, 1, "int8"},
    {"<i2", NpyType::int16, 2, "int16"},     {"<i4", NpyType::int32, 4, "int32"},
    {"<i8", NpyType::int64, 8, "int64"},     {"|u1", NpyType::uint8, 1, "uint8"},
    {"<u1", NpyType::uint8, 1, "uint8"},     {"<u2", NpyType::uint16, 2, "uint16"},
    {"<u4", NpyType::uint32, 4, "uint32"},   {"<u8", NpyType::uint64, 8, "uint64"},
    {"|b1", NpyType::bool8, 1, "bool"},
};

inline const char* npy_type_name(NpyType type) noexcept {
  for (const auto& d : npy_dtypes) {
    if (d.type == type) return d.name;
  }
  return "?";
}

inline std::string npy_shape_text(const std::vector<std::size_t>& shape) {
  std::string text = "(";
  for (std::size_t k = 0; k < shape.size(); ++k) text += (k ? ", " : "") + std::to_string(shape[k]);
  return text + (shape.size() == 1 ? ",)" : ")");
}

// Bytes as a printable Python-like literal, for messages about what a file holds instead.
inline std::string npy_quote(std::string_view bytes, std::size_t limit = 40) {
  std::string text;
  for (unsigned char c : bytes.substr(0, limit)) {
    if (c >= 0x20 && c < 0x7f && c != '\\') {
      text += static_cast<char>(c);
    } else {
      static const char digits[] = "0123456789abcdef";
      text += "\\x";
      text += digits[c >> 4];
      text += digits[c & 15];
    }
  }
  return text + (bytes.size() > limit ? "..." : "");
}

// The header's text is a Python dict literal, as numpy's writer produces it:
//   {'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }<spaces>\n
// Parsed strictly (only the three keys, each once; string, bool and int-tuple values) rather
// than evaluated: anything else is an error naming the byte where it went wrong.
class NpyDictParser {
 public:
  NpyDictParser(const std::filesystem::path& file, std::string_view text) : file_(file), text_(text) {}

  NpyHeader parse() {
    NpyHeader h;
    bool have_descr = false, have_order = false, have_shape = false;
    skip_space();
    expect('{', "'{' (the header is a Python dict literal)");
    skip_space();
    while (peek() != '}') {
      const std::string key = string_literal("a key");
      skip_space();
      expect(':', "':' after key '" + key + "'");
      skip_space();
      bool* seen = key == "descr" ? &have_descr : key == "fortran_order" ? &have_order : key == "shape" ? &have_shape : nullptr;
      if (seen == nullptr) {
        fail("unexpected key '" + npy_quote(key) + "' (a .npy header has exactly 'descr', 'fortran_order' and 'shape')");
      }
      if (*seen) fail("key '" + key + "' appears twice");
      *seen = true;
      if (key == "descr") {
        if (peek() != '\'' && peek() != '"') {
          fail("'descr' is not a string: structured dtypes (records) are not supported; save a plain numeric array");
        }
        h.descr = string_literal("the dtype");
      } else if (key == "fortran_order") {
        if (text_.substr(at_, 4) == "True") {
          throw DataError(file_, "fortran_order is True; hpf reads C-order arrays (save numpy.ascontiguousarray(a))");
        }
        if (text_.substr(at_, 5) != "False") fail("'fortran_order' is neither True nor False");
        at_ += 5;
      } else {
        h.shape = shape_tuple();
      }
      skip_space();
      if (peek() == ',') {
        ++at_;
        skip_space();
      } else if (peek() != '}') {
        fail("expected ',' or '}' after the value of '" + key + "'");
      }
    }
    ++at_;  // '}'
    while (at_ < text_.size() && text_[at_] == ' ') ++at_;
    if (at_ + 1 != text_.size() || text_[at_] != '\n') {
      fail("expected only spaces and a final newline after the dict");
    }
    if (!have_descr) missing("descr");
    if (!have_order) missing("fortran_order");
    if (!have_shape) missing("shape");
    set_dtype(h);
    return h;
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    // The header as written, less numpy's padding: enough to see what went wrong at byte at_.
    const std::string_view shown = text_.substr(0, text_.find_last_not_of(" \n") + 1);
    throw DataError(file_, "malformed .npy header: " + what + " at byte " + std::to_string(at_) + " of '" +
                               npy_quote(shown, 200) + "'");
  }
  [[noreturn]] void missing(const char* key) const {
    throw DataError(file_, std::string("malformed .npy header: no '") + key +
                               "' (a .npy header has exactly 'descr', 'fortran_order' and 'shape')");
  }
  char peek() const {
    if (at_ >= text_.size()) fail("the header ends inside the dict");
    return text_[at_];
  }
  void expect(char c, const std::string& what) {
    if (peek() != c) fail("expected " + what);
    ++at_;
  }
  void skip_space() {
    while (at_ < text_.size() && (text_[at_] == ' ' || text_[at_] == '\t')) ++at_;
  }
  // 'text' or "text" without escapes (numpy writes none in these three fields).
  std::string string_literal(const char* what) {
    const char quote = peek();
    if (quote != '\'' && quote != '"') fail(std::string("expected a quoted string as ") + what);
    const std::size_t begin = ++at_;
    while (peek() != quote) {
      if (text_[at_] == '\\' || text_[at_] == '\n') fail("escapes and line breaks are not allowed in strings");
      ++at_;
    }
    return std::string(text_.substr(begin, at_++ - begin));
  }
  std::vector<std::size_t> shape_tuple() {
    std::vector<std::size_t> shape;
    expect('(', "'(' (the shape is a tuple of ints)");
    skip_space();
    bool comma = false;  // after the last element
    while (peek() != ')') {
      if (peek() < '0' || peek() > '9') fail("expected a non-negative integer in the shape");
      std::size_t value = 0;
      while (peek() >= '0' && peek() <= '9') {
        const std::size_t digit = static_cast<std::size_t>(text_[at_] - '0');
        if (value > (std::numeric_limits<std::size_t>::max() - digit) / 10) fail("a dimension too large to address");
        value = value * 10 + digit;
        ++at_;
      }
      shape.push_back(value);
      skip_space();
      comma = peek() == ',';
      if (comma) {
        ++at_;
        skip_space();
      } else if (peek() != ')') {
        fail("expected ',' or ')' in the shape");
      }
    }
    // Python's (3) is the int 3, not a tuple: a 1-D shape needs its comma.
    if (shape.size() == 1 && !comma) fail("a one-element shape needs a trailing comma, as in (3,)");
    ++at_;  // ')'
    return shape;
  }
  void set_dtype(NpyHeader& h) const {
    for (const auto& d : npy_dtypes) {
      if (h.descr == d.descr) {
        h.type = d.type;
        h.item_size = d.size;
        return;
      }
    }
    if (!h.descr.empty() && h.descr[0] == '>') {
      throw DataError(file_, "dtype '" + npy_quote(h.descr) + "' is big-endian; hpf reads little-endian data (save a.astype('<" +
                                 npy_quote(h.descr.substr(1)) + "'))");
    }
    throw DataError(file_, "unsupported dtype '" + npy_quote(h.descr) +
                               "'; hpf reads float32, float64, int8..int64, uint8..uint64 and bool "
                               "(convert with a.astype(numpy.float32))");
  }

  const std::filesystem::path& file_;
  std::string_view text_;
  std::size_t at_ = 0;
};

// A header longer than this is not an array header (numpy's own reader stops at 10000 bytes by
// default); checked before allocating, so a corrupt length cannot make hpf allocate gigabytes.
inline constexpr std::size_t npy_max_header = std::size_t{1} << 20;

inline NpyHeader read_npy_header(const NpyFile& in) {
  unsigned char prefix[12] = {};
  const std::size_t got = in.read_at(0, prefix, sizeof prefix);
  static constexpr unsigned char magic[6] = {0x93, 'N', 'U', 'M', 'P', 'Y'};
  if (got < 6 || std::memcmp(prefix, magic, 6) != 0) {
    throw DataError(in.file(), "not a .npy file: it starts with '" +
                                   npy_quote(std::string_view(reinterpret_cast<const char*>(prefix), std::min<std::size_t>(got, 6))) +
                                   "', not '\\x93NUMPY'");
  }
  if (got < 8) throw DataError(in.file(), "truncated: the file ends inside the .npy format version");
  const int major = prefix[6], minor = prefix[7];
  if (major < 1 || major > 3 || minor != 0) {
    throw DataError(in.file(), "unsupported .npy format version " + std::to_string(major) + "." + std::to_string(minor) +
                                   " (hpf reads 1.0, 2.0 and 3.0)");
  }
  // Version 1 stores the header length in 2 bytes, versions 2 and 3 in 4 (little-endian).
  const std::size_t length_bytes = major == 1 ? 2 : 4, text_begin = 8 + length_bytes;
  if (got < text_begin) throw DataError(in.file(), "truncated: the file ends inside the .npy header length");
  std::size_t length = 0;
  for (std::size_t k = 0; k < length_bytes; ++k) length |= std::size_t{prefix[8 + k]} << (8 * k);
  if (length > npy_max_header) {
    throw DataError(in.file(), "the .npy header claims " + std::to_string(length) + " bytes, more than hpf reads (" +
                                   std::to_string(npy_max_header) + "); the file is not a .npy array");
  }
  if (in.size() - text_begin < length) {
    throw DataError(in.file(), "truncated header: it declares " + std::to_string(length) + " bytes after the " +
                                   std::to_string(text_begin) + "-byte prefix, the file holds " +
                                   std::to_string(in.size() - text_begin));
  }
  std::string text(length, '\0');
  in.read_exactly(text_begin, text.data(), length);
  NpyHeader h = NpyDictParser(in.file(), text).parse();
  h.major_version = major;
  h.data_offset = text_begin + length;

  // Elements times item size, without overflow, must be exactly what follows the header.
  std::uint64_t bytes = h.item_size;
  for (std::size_t d : h.shape) {
    if (d != 0 && bytes > std::numeric_limits<std::uint64_t>::max() / d) {
      throw DataError(in.file(), "shape " + npy_shape_text(h.shape) + " describes more data than can be addressed");
    }
    bytes *= d;
  }
  if (std::find(h.shape.begin(), h.shape.end(), std::size_t{0}) != h.shape.end()) bytes = 0;
  const std::uint64_t holds = in.size() - h.data_offset;
  if (bytes != holds) {
    throw DataError(in.file(), "shape " + npy_shape_text(h.shape) + " of " + npy_type_name(h.type) + " describes " +
                                   std::to_string(bytes) + " bytes of data, but the file holds " + std::to_string(holds) +
                                   " after its " + std::to_string(h.data_offset) + "-byte header" +
                                   (bytes > holds ? " (truncated?)" : ""));
  }
  return h;
}

// One element of type Source at `bytes` (little-endian, any alignment) as T. Integers that do not
// fit T saturate (so an out-of-range label stays out of range); floats convert as static_cast.
template <class Source, class T>
T npy_element(const unsigned char* bytes) {
  Source v;
  std::memcpy(&v, bytes, sizeof v);
  if constexpr (std::endian::native == std::endian::big && sizeof(Source) > 1) {
    auto raw = std::bit_cast<std::array<unsigned char, sizeof(Source)>>(v);
    std::reverse(raw.begin(), raw.end());
    v = std::bit_cast<Source>(raw);
  }
  if constexpr (std::is_integral_v<T> && std::is_integral_v<Source>) {
    if (std::cmp_greater(v, std::numeric_limits<T>::max())) return std::numeric_limits<T>::max();
    if (std::cmp_less(v, std::numeric_limits<T>::min())) return std::numeric_limits<T>::min();
  }
  return static_cast<T>(v);
}

template <class Source, class T>
void npy_convert(const unsigned char* bytes, std::size_t count, T* out) {
  for (std::size_t k = 0; k < count; ++k) out[k] = npy_element<Source, T>(bytes + k * sizeof(Source));
}

template <class T>
void npy_convert(NpyType type, const unsigned char* bytes, std::size_t count, T* out) {
  switch (type) {
    case NpyType::float32:
    case NpyType::float64:
      if constexpr (std::is_floating_point_v<T>) {
        if (type == NpyType::float32) npy_convert<float>(bytes, count, out);
        else npy_convert<double>(bytes, count, out);
      }
      return;  // integral T: refused before any data is read (read_npy)
    case NpyType::int8: return npy_convert<std::int8_t>(bytes, count, out);
    case NpyType::int16: return npy_convert<std::int16_t>(bytes, count, out);
    case NpyType::int32: return npy_convert<std::int32_t>(bytes, count, out);
    case NpyType::int64: return npy_convert<std::int64_t>(bytes, count, out);
    case NpyType::uint8:
    case NpyType::bool8: return npy_convert<std::uint8_t>(bytes, count, out);
    case NpyType::uint16: return npy_convert<std::uint16_t>(bytes, count, out);
    case NpyType::uint32: return npy_convert<std::uint32_t>(bytes, count, out);
    case NpyType::uint64: return npy_convert<std::uint64_t>(bytes, count, out);
  }
}

}  // namespace detail

/// Reads and checks only the header of a .npy file (see read_npy): cheap, for processes that
/// need an array's shape but not its data. Throws DataError naming the file and the problem.
inline NpyHeader read_npy_header(const std::filesystem::path& file) {
  detail::NpyFile in(file);
  return detail::read_npy_header(in);
}

/// \brief Reads the rows (items along the first axis) i with `i % stride == offset` of a .npy
/// file, converted to T; all rows by default.
///
/// The header is parsed strictly: format 1.0, 2.0 or 3.0; exactly the keys 'descr',
/// 'fortran_order' and 'shape'; a little-endian float32, float64, (u)int8..64 or bool dtype; C
/// order; and a shape whose size is exactly the data that follows. Any violation, a missing or
/// unreadable file, or float data read as integers (T integral) is a DataError naming the file.
/// Only the kept rows are converted and stored; rows far apart (a shard of large samples) are
/// reached by seeking past the others, rows close together are read in 1 MiB blocks.
template <class T = float>
NpyArray<T> read_npy(const std::filesystem::path& file, std::size_t stride = 1, std::size_t offset = 0) {
  static_assert(std::is_arithmetic_v<T>, "hpf::data::read_npy: T must be an arithmetic type");
  if (stride == 0 || offset >= stride) {
    throw std::invalid_argument("hpf::data::read_npy: offset " + std::to_string(offset) + " is not below stride " +
                                std::to_string(stride));
  }
  detail::NpyFile in(file);
  NpyArray<T> array{detail::read_npy_header(in), {}};
  const NpyHeader& h = array.header;
  if (std::is_integral_v<T> && h.is_float()) {
    throw DataError(file, std::string("holds ") + detail::npy_type_name(h.type) +
                              " values where integers are expected (save a.astype(numpy.int64))");
  }
  const std::size_t rows = h.rows(), per_row = h.row_elements(), row_bytes = per_row * h.item_size;
  const std::size_t kept = rows > offset ? (rows - offset + stride - 1) / stride : 0;
  // The header matched the file's size, so this allocation is bounded by the file (times the
  // widening from the item size to sizeof(T)).
  array.values.resize(kept * per_row);
  if (row_bytes == 0 || kept == 0) return array;

  constexpr std::size_t block_bytes = std::size_t{1} << 20, seek_gap = std::size_t{1} << 16;
  std::vector<unsigned char> buffer;
  if (stride > 1 && row_bytes * (stride - 1) >= seek_gap) {  // one read per kept row
    buffer.resize(row_bytes);
    for (std::size_t k = 0; k < kept; ++k) {
      in.read_exactly(h.data_offset + std::uint64_t{offset + k * stride} * row_bytes, buffer.data(), row_bytes);
      detail::npy_convert(h.type, buffer.data(), per_row, array.values.data() + k * per_row);
    }
    return array;
  }
  // Blocks of whole rows from the first kept row to the last.
  const std::size_t block_rows = std::max<std::size_t>(1, block_bytes / row_bytes);
  const std::size_t last = offset + (kept - 1) * stride;
  buffer.resize(std::min(block_rows, last - offset + 1) * row_bytes);
  for (std::size_t first = offset; first <= last; first += block_rows) {
    const std::size_t n = std::min(block_rows, last + 1 - first);
    in.read_exactly(h.data_offset + std::uint64_t{first} * row_bytes, buffer.data(), n * row_bytes);
    for (std::size_t r = (stride - (first - offset) % stride) % stride; r < n; r += stride) {
      const std::size_t k = (first + r - offset) / stride;
      detail::npy_convert(h.type, buffer.data() + r * row_bytes, per_row, array.values.data() + k * per_row);
    }
  }
  return array;
}

}  // namespace hpf::data

#endif  // HPF_DATA_NPY_HPP
