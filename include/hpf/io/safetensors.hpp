// SPDX-License-Identifier: MIT
#ifndef HPF_IO_SAFETENSORS_HPP
#define HPF_IO_SAFETENSORS_HPP

#include <hpf/io/detail/json.hpp>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>
#include <type_traits>
#include <utility>
#include <vector>

namespace hpf::io {

static_assert(std::endian::native == std::endian::little,
              "hpf::io: safetensors data is little-endian and hpf copies it as it is; big-endian hosts are not supported");

/// Element types of the safetensors format (https://github.com/huggingface/safetensors), by the
/// names its header uses.
enum class Dtype { BOOL, U8, I8, U16, I16, F16, BF16, U32, I32, F32, U64, I64, F64 };

/// The header's name of a dtype ("F32").
constexpr std::string_view dtype_name(Dtype d) noexcept {
  constexpr std::string_view names[] = {"BOOL", "U8", "I8",  "U16", "I16", "F16", "BF16",
                                        "U32",  "I32", "F32", "U64", "I64", "F64"};
  return names[static_cast<int>(d)];
}
/// Bytes per element.
constexpr std::size_t dtype_size(Dtype d) noexcept {
  constexpr std::size_t sizes[] = {1, 1, 1, 2, 2, 2, 2, 4, 4, 4, 8, 8, 8};
  return sizes[static_cast<int>(d)];
}
/// The dtype a header names, or nothing.
constexpr std::optional<Dtype> parse_dtype(std::string_view name) noexcept {
  for (int k = 0; k <= static_cast<int>(Dtype::F64); ++k) {
    if (dtype_name(static_cast<Dtype>(k)) == name) return static_cast<Dtype>(k);
  }
  return std::nullopt;
}

// dtype_v<T>: the dtype of C++ element type T
namespace detail {
template <class T>
struct dtype_of {
  // An error "no member named 'value'" here means T has no safetensors dtype (use float, double,
  // bool or a fixed-width integer)
};
template <> struct dtype_of<bool> { static constexpr Dtype value = Dtype::BOOL; };
template <> struct dtype_of<std::uint8_t> { static constexpr Dtype value = Dtype::U8; };
template <> struct dtype_of<std::int8_t> { static constexpr Dtype value = Dtype::I8; };
template <> struct dtype_of<std::uint16_t> { static constexpr Dtype value = Dtype::U16; };
template <> struct dtype_of<std::int16_t> { static constexpr Dtype value = Dtype::I16; };
template <> struct dtype_of<std::uint32_t> { static constexpr Dtype value = Dtype::U32; };
template <> struct dtype_of<std::int32_t> { static constexpr Dtype value = Dtype::I32; };
template <> struct dtype_of<float> { static constexpr Dtype value = Dtype::F32; };
template <> struct dtype_of<std::uint64_t> { static constexpr Dtype value = Dtype::U64; };
template <> struct dtype_of<std::int64_t> { static constexpr Dtype value = Dtype::I64; };
template <> struct dtype_of<double> { static constexpr Dtype value = Dtype::F64; };
}  // namespace detail
template <class T>
inline constexpr Dtype dtype_v = detail::dtype_of<std::remove_cv_t<T>>::value;

/// \brief A safetensors file that cannot be read or written, is malformed, or does not hold
/// what the caller asked for. The message names the file: "hpf::io: <path>: <problem>".
class FormatError : public std::runtime_error {
 public:
  /// "hpf::io: <absolute path of file>: <problem>" ("<in memory>" for an empty path).
  FormatError(const std::filesystem::path& file, const std::string& problem)
      : std::runtime_error("hpf::io: " + full_path(file) + ": " + problem), file_(file) {}
  const std::filesystem::path& file() const noexcept { return file_; }

 private:
  static std::string full_path(const std::filesystem::path& file) {
    if (file.empty()) return "<in memory>";
    std::error_code ec;
    const std::filesystem::path absolute = std::filesystem::absolute(file, ec);
    return (ec ? file : absolute).lexically_normal().string();
  }
  std::filesystem::path file_;
};

/// "[2, 3]" (a scalar's shape is "[]").
inline std::string shape_text(const std::vector<std::size_t>& shape) {
  std::string s = "[";
  for (std::size_t k = 0; k < shape.size(); ++k) s += (k ? ", " : "") + std::to_string(shape[k]);
  return s + "]";
}

/// One tensor: element type, row-major shape and its little-endian bytes.
struct TensorData {
  Dtype dtype = Dtype::F32;
  std::vector<std::size_t> shape;
  std::vector<std::byte> bytes;

  /// Product of the extents (1 for a scalar, shape []).
  std::size_t elements() const noexcept {
    std::size_t n = 1;
    for (std::size_t d : shape) n *= d;
    return n;
  }
};

/// \brief The contents of a safetensors file: named tensors (in the order added, or in the order
/// of their data in a loaded file) and optional string metadata.
///
/// The format: an 8-byte little-endian header length N, N bytes of JSON
/// `{"name": {"dtype": "F32", "shape": [2, 3], "data_offsets": [begin, end]}, ...,
///   "__metadata__": {"key": "value"}}` (save() pads it with spaces to a multiple of 8), then the
/// data, each tensor's bytes at [begin, end) of it. load() checks what the reference
/// implementation checks: a complete header, known dtypes, byte counts that match the shapes, and
/// data offsets that cover the data exactly, without holes or overlaps. Unknown keys inside a
/// tensor's entry are ignored.
class Safetensors {
 public:
  /// The reserved header key of the metadata.
  static constexpr std::string_view metadata_key = "__metadata__";

  // Building

  /// Adds a tensor of `shape` holding `values` (row-major; as many as the shape has elements).
  template <class T>
  void add(std::string name, std::vector<std::size_t> shape, std::span<const T> values) {
    TensorData t;
    t.dtype = dtype_v<T>;
    t.shape = std::move(shape);
    if (t.elements() != values.size()) {
      throw std::invalid_argument("hpf::io::Safetensors::add: tensor '" + name + "' of shape " + shape_text(t.shape) +
                                  " needs " + std::to_string(t.elements()) + " values, got " +
                                  std::to_string(values.size()));
    }
    t.bytes.resize(values.size_bytes());
    if (!values.empty()) std::memcpy(t.bytes.data(), values.data(), values.size_bytes());
    add(std::move(name), std::move(t));
  }
  template <class T>
  void add(std::string name, std::vector<std::size_t> shape, const std::vector<T>& values) {
    static_assert(!std::is_same_v<T, bool>,
                  "hpf::io::Safetensors::add: std::vector<bool> is not contiguous; pass a std::span<const bool>");
    add(std::move(name), std::move(shape), std::span<const T>(values));
  }
  /// Adds a tensor given as bytes; throws std::invalid_argument for a reserved or repeated name
  /// or a byte count that does not match dtype and shape.
  void add(std::string name, TensorData tensor) {
    if (name == metadata_key) {
      throw std::invalid_argument("hpf::io::Safetensors::add: '" + name + "' is reserved for the metadata");
    }
    if (index_.count(name)) throw std::invalid_argument("hpf::io::Safetensors::add: a tensor '" + name + "' exists already");
    if (const auto bytes = byte_count(tensor.dtype, tensor.shape); !bytes || *bytes != tensor.bytes.size()) {
      throw std::invalid_argument("hpf::io::Safetensors::add: tensor '" + name + "' (" +
                                  std::string(dtype_name(tensor.dtype)) + " " + shape_text(tensor.shape) + ") given " +
                                  std::to_string(tensor.bytes.size()) + " bytes");
    }
    index_.emplace(name, entries_.size());
    entries_.emplace_back(std::move(name), std::move(tensor));
  }

  /// String metadata (header key "__metadata__"), saved only when not empty.
  std::map<std::string, std::string>& metadata() noexcept { return metadata_; }
  const std::map<std::string, std::string>& metadata() const noexcept { return metadata_; }

  // Reading

  std::size_t size() const noexcept { return entries_.size(); }
  bool contains(std::string_view name) const { return index_.find(name) != index_.end(); }
  /// Names of all tensors, in order.
  std::vector<std::string> names() const {
    std::vector<std::string> out;
    out.reserve(entries_.size());
    for (const auto& e : entries_) out.push_back(e.first);
    return out;
  }
  /// A tensor by name; throws FormatError (naming the file) if there is none.
  const TensorData& at(std::string_view name) const {
    const auto it = index_.find(name);
    if (it == index_.end()) throw FormatError(source_, "no tensor named '" + std::string(name) + "'");
    return entries_[it->second].second;
  }
  /// A tensor's values as T; throws FormatError unless its dtype is exactly T's.
  template <class T>
  std::vector<T> get(std::string_view name) const {
    const TensorData& t = at(name);
    if (t.dtype != dtype_v<T>) {
      throw FormatError(source_, "tensor '" + std::string(name) + "' is " + std::string(dtype_name(t.dtype)) +
                                     ", expected " + std::string(dtype_name(dtype_v<T>)));
    }
    std::vector<T> out(t.elements());
    if constexpr (std::is_same_v<T, bool>) {  // std::vector<bool> packs bits
      for (std::size_t i = 0; i < out.size(); ++i) out[i] = t.bytes[i] != std::byte{0};
    } else if (!out.empty()) {
      std::memcpy(out.data(), t.bytes.data(), t.bytes.size());
    }
    return out;
  }
  /// A tensor's values converted to T (static_cast per element, e.g. F64 to float rounds);
  /// throws FormatError for F16/BF16, which hpf does not convert.
  template <class T>
  std::vector<T> get_converted(std::string_view name) const {
    const TensorData& t = at(name);
    std::vector<T> out(t.elements());
    auto convert = [&](auto tag) {
      using S = decltype(tag);
      for (std::size_t i = 0; i < out.size(); ++i) {
        S v;
        std::memcpy(&v, t.bytes.data() + i * sizeof(S), sizeof(S));
        out[i] = static_cast<T>(v);
      }
    };
    switch (t.dtype) {
      case Dtype::BOOL: {
        for (std::size_t i = 0; i < out.size(); ++i) out[i] = static_cast<T>(t.bytes[i] != std::byte{0});
        break;
      }
      case Dtype::U8: convert(std::uint8_t{}); break;
      case Dtype::I8: convert(std::int8_t{}); break;
      case Dtype::U16: convert(std::uint16_t{}); break;
      case Dtype::I16: convert(std::int16_t{}); break;
      case Dtype::U32: convert(std::uint32_t{}); break;
      case Dtype::I32: convert(std::int32_t{}); break;
      case Dtype::F32: convert(float{}); break;
      case Dtype::U64: convert(std::uint64_t{}); break;
      case Dtype::I64: convert(std::int64_t{}); break;
      case Dtype::F64: convert(double{}); break;
      case Dtype::F16:
      case Dtype::BF16:
        throw FormatError(source_, "tensor '" + std::string(name) + "' is " + std::string(dtype_name(t.dtype)) +
                                       ", which hpf does not convert");
    }
    return out;
  }
  /// The file this was loaded from (empty if built in memory).
  const std::filesystem::path& source() const noexcept { return source_; }

  // Files

  /// The file's bytes: header length, header (padded with spaces to a multiple of 8), data.
  std::vector<std::byte> serialize() const {
    // Appended piece by piece (GCC 12 warns, wrongly, about `const char* + std::string` here).
    std::string header = "{";
    auto separate = [&header] {
      if (header.size() > 1) header += ',';
    };
    if (!metadata_.empty()) {
      header += detail::json_quote(metadata_key);
      header += ":{";
      for (const auto& [key, value] : metadata_) {
        if (header.back() != '{') header += ',';
        header += detail::json_quote(key);
        header += ':';
        header += detail::json_quote(value);
      }
      header += '}';
    }
    std::size_t offset = 0;
    for (const auto& [name, t] : entries_) {
      separate();
      header += detail::json_quote(name);
      header += ":{\"dtype\":\"";
      header += dtype_name(t.dtype);
      header += "\",\"shape\":[";
      for (std::size_t k = 0; k < t.shape.size(); ++k) {
        if (k) header += ',';
        header += std::to_string(t.shape[k]);
      }
      header += "],\"data_offsets\":[";
      header += std::to_string(offset);
      header += ',';
      header += std::to_string(offset + t.bytes.size());
      header += "]}";
      offset += t.bytes.size();
    }
    header += "}";
    header.append((8 - header.size() % 8) % 8, ' ');
    std::vector<std::byte> out(8 + header.size() + offset);
    const std::uint64_t length = header.size();
    std::memcpy(out.data(), &length, 8);
    std::memcpy(out.data() + 8, header.data(), header.size());
    std::byte* data = out.data() + 8 + header.size();
    for (const auto& entry : entries_) {
      if (!entry.second.bytes.empty()) std::memcpy(data, entry.second.bytes.data(), entry.second.bytes.size());
      data += entry.second.bytes.size();
    }
    return out;
  }

  /// Writes the file: to "<file>.tmp" first, then renamed over `file`, so that a crash never
  /// leaves a half-written file under the final name. Throws FormatError on failure.
  void save(const std::filesystem::path& file) const {
    const std::vector<std::byte> bytes = serialize();
    std::filesystem::path partial = file;
    partial += ".tmp";
    {
      std::ofstream out(partial, std::ios::binary | std::ios::trunc);
      if (!out) throw FormatError(file, "cannot open " + partial.string() + " for writing: " + std::strerror(errno));
      out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
      out.close();
      if (!out) {
        std::error_code ignored;
        std::filesystem::remove(partial, ignored);
        throw FormatError(file, "writing " + std::to_string(bytes.size()) + " bytes failed");
      }
    }
    std::error_code ec;
    std::filesystem::rename(partial, file, ec);
    if (ec) throw FormatError(file, "cannot rename " + partial.string() + " to it: " + ec.message());
  }

  /// Reads and checks a file; throws FormatError naming it on any problem.
  static Safetensors load(const std::filesystem::path& file) {
    std::ifstream in(file, std::ios::binary | std::ios::ate);
    if (!in) throw FormatError(file, std::string("cannot open: ") + std::strerror(errno));
    const std::streamoff size = in.tellg();
    in.seekg(0);
    std::vector<std::byte> raw(size > 0 ? static_cast<std::size_t>(size) : 0);
    if (size < 0 || !in.read(reinterpret_cast<char*>(raw.data()), static_cast<std::streamsize>(raw.size()))) {
      throw FormatError(file, "read error");
    }
    return parse(raw, file);
  }

  /// Parses a whole file's bytes; `file` only names it in errors.
  static Safetensors parse(std::span<const std::byte> bytes, const std::filesystem::path& file = {}) {
    auto fail = [&](const std::string& problem) -> FormatError { return FormatError(file, problem); };
    if (bytes.size() < 8) {
      throw fail("truncated: " + std::to_string(bytes.size()) + " bytes, too short for the 8-byte header length");
    }
    std::uint64_t length = 0;
    std::memcpy(&length, bytes.data(), 8);
    if (length > bytes.size() - 8) {
      throw fail("truncated: the header length says " + std::to_string(length) + " bytes but only " +
                 std::to_string(bytes.size() - 8) + " follow");
    }
    const std::string_view header(reinterpret_cast<const char*>(bytes.data() + 8), static_cast<std::size_t>(length));
    const std::span<const std::byte> data = bytes.subspan(8 + static_cast<std::size_t>(length));
    Layout layout = parse_header(header, data.size(), file);
    Safetensors result;
    result.source_ = file;
    result.metadata_ = std::move(layout.metadata);
    for (Placed& p : layout.tensors) {
      p.tensor.bytes.assign(data.begin() + static_cast<std::ptrdiff_t>(p.begin), data.begin() + static_cast<std::ptrdiff_t>(p.end));
      result.index_.emplace(p.name, result.entries_.size());
      result.entries_.emplace_back(std::move(p.name), std::move(p.tensor));
    }
    return result;
  }

  /// A tensor's place in a file: its header entry (bytes left empty) and its byte range
  /// [begin, end) within the data that follows the header.
  struct Placed {
    std::string name;
    TensorData tensor;
    std::uint64_t begin = 0, end = 0;
  };
  /// What a header says: the tensors in the order of their data, and the metadata.
  struct Layout {
    std::vector<Placed> tensors;
    std::map<std::string, std::string> metadata;
  };

  /// Parses and checks a header (the JSON text after the 8-byte length) for `data_size` bytes of
  /// data after it, without reading the data: what a reader needs to fetch tensors one by one.
  /// `file` only names it in errors.
  static Layout parse_header(std::string_view header, std::uint64_t data_size, const std::filesystem::path& file = {}) {
    auto fail = [&](const std::string& problem) -> FormatError { return FormatError(file, problem); };
    if (header.empty() || header.front() != '{') throw fail("bad header: it must be a JSON object starting with '{'");
    detail::JsonValue root;
    try {
      root = detail::JsonParser::parse(header);
    } catch (const detail::JsonError& e) {
      throw fail(std::string("bad header: ") + e.what());
    }
    Layout layout;
    std::map<std::string, int, std::less<>> seen;
    bool seen_metadata = false;
    for (auto& [name, value] : root.members) {
      if (name == metadata_key) {
        if (seen_metadata) throw fail("bad header: '__metadata__' appears twice");
        seen_metadata = true;
        if (value.kind != detail::JsonValue::Kind::object) throw fail("bad header: '__metadata__' must be an object");
        for (auto& [key, text] : value.members) {
          if (text.kind != detail::JsonValue::Kind::string) {
            throw fail("bad header: metadata '" + key + "' must be a string, found " + detail::json_kind_name(text.kind));
          }
          if (!layout.metadata.emplace(key, std::move(text.text)).second) {
            throw fail("bad header: metadata '" + key + "' appears twice");
          }
        }
        continue;
      }
      if (!seen.emplace(name, 0).second) throw fail("bad header: tensor '" + name + "' appears twice");
      auto [tensor, begin, end] = describe(name, value, fail);
      if (end > data_size) {
        throw fail("offsets out of range: tensor '" + name + "' has data_offsets [" + std::to_string(begin) + ", " +
                   std::to_string(end) + "] but the data holds " + std::to_string(data_size) + " bytes");
      }
      layout.tensors.push_back({name, std::move(tensor), begin, end});
    }
    // The data must be covered exactly: sorted by offset, each tensor starts where the last ended.
    std::stable_sort(layout.tensors.begin(), layout.tensors.end(), [](const Placed& a, const Placed& b) {
      return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
    });
    std::uint64_t covered = 0;
    for (const Placed& p : layout.tensors) {
      if (p.begin != covered) {
        throw fail(std::string(p.begin < covered ? "overlapping data: tensor '" : "hole in the data: tensor '") + p.name +
                   "' starts at byte " + std::to_string(p.begin) + " of the data, the tensors before it end at " +
                   std::to_string(covered));
      }
      covered = p.end;
    }
    if (covered != data_size) {
      throw fail("offsets do not cover the data: the tensors end at byte " + std::to_string(covered) + " but the data holds " +
                 std::to_string(data_size) + " bytes");
    }
    return layout;
  }

 private:
  // Bytes of a tensor of this dtype and shape; nothing if the count overflows.
  static std::optional<std::uint64_t> byte_count(Dtype dtype, const std::vector<std::size_t>& shape) {
    std::uint64_t n = dtype_size(dtype);
    for (std::size_t d : shape) {
      if (d != 0 && n > UINT64_MAX / d) return std::nullopt;
      n *= d;
    }
    return n;
  }

  struct Described {
    TensorData tensor;
    std::uint64_t begin, end;
  };
  // A tensor's header entry, checked; `fail` makes the error that names the file.
  template <class Fail>
  static Described describe(const std::string& name, const detail::JsonValue& value, const Fail& fail) {
    using Kind = detail::JsonValue::Kind;
    const std::string where = "bad header: tensor '" + name + "'";
    if (value.kind != Kind::object) throw fail(where + " must be an object, found " + detail::json_kind_name(value.kind));
    const detail::JsonValue *dtype = nullptr, *shape = nullptr, *offsets = nullptr;
    for (const auto& [key, v] : value.members) {
      const detail::JsonValue** slot = key == "dtype" ? &dtype : key == "shape" ? &shape : key == "data_offsets" ? &offsets : nullptr;
      if (!slot) continue;
      if (*slot) throw fail(where + ": '" + key + "' appears twice");
      *slot = &v;
    }
    if (!dtype || !shape || !offsets) {
      throw fail(where + " lacks '" + std::string(!dtype ? "dtype" : !shape ? "shape" : "data_offsets") + "'");
    }
    Described d{};
    if (dtype->kind != Kind::string) throw fail(where + ": dtype must be a string");
    const auto parsed = parse_dtype(dtype->text);
    if (!parsed) throw fail(where + " has unknown dtype '" + dtype->text + "'");
    d.tensor.dtype = *parsed;
    if (shape->kind != Kind::array) throw fail(where + ": shape must be an array");
    for (const auto& extent : shape->items) {
      std::uint64_t e = 0;
      if (!detail::json_unsigned(extent, e) || e > SIZE_MAX) {
        throw fail(where + ": shape must hold non-negative integers, found '" + extent.text + "'");
      }
      d.tensor.shape.push_back(static_cast<std::size_t>(e));
    }
    if (offsets->kind != Kind::array || offsets->items.size() != 2 || !detail::json_unsigned(offsets->items[0], d.begin) ||
        !detail::json_unsigned(offsets->items[1], d.end) || d.begin > d.end) {
      throw fail(where + ": data_offsets must be [begin, end] with 0 <= begin <= end");
    }
    const auto bytes = byte_count(d.tensor.dtype, d.tensor.shape);
    if (!bytes || *bytes != d.end - d.begin) {
      throw fail(where + " (" + std::string(dtype_name(d.tensor.dtype)) + " " + shape_text(d.tensor.shape) + ") needs " +
                 (bytes ? std::to_string(*bytes) : std::string("too many")) + " bytes but data_offsets [" +
                 std::to_string(d.begin) + ", " + std::to_string(d.end) + "] hold " + std::to_string(d.end - d.begin));
    }
    return d;
  }

  std::vector<std::pair<std::string, TensorData>> entries_;
  std::map<std::string, std::size_t, std::less<>> index_;
  std::map<std::string, std::string> metadata_;
  std::filesystem::path source_;
};

}  // namespace hpf::io

#endif  // HPF_IO_SAFETENSORS_HPP
