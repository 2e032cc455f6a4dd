// SPDX-License-Identifier: MIT
#ifndef HPF_IO_SAFETENSORS_READER_HPP
#define HPF_IO_SAFETENSORS_READER_HPP

#include <hpf/io/safetensors.hpp>

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace hpf::io {

/// \brief A safetensors file opened for reading tensor by tensor: the header is read and checked
/// (as Safetensors::load checks it, against the file's real length) when opened; a tensor's bytes
/// are read only when asked for, so a checkpoint far larger than memory can be loaded piecewise.
class SafetensorsReader {
 public:
  /// Opens and checks `file`; throws FormatError naming it if it cannot be read, is truncated or
  /// its header is malformed.
  explicit SafetensorsReader(const std::filesystem::path& file) : file_(file), in_(file, std::ios::binary) {
    if (!in_) throw FormatError(file, std::string("cannot open: ") + std::strerror(errno));
    std::error_code ec;
    const std::uintmax_t size = std::filesystem::file_size(file, ec);
    if (ec) throw FormatError(file, "cannot read its size: " + ec.message());
    if (size < 8) throw FormatError(file, "truncated: " + std::to_string(size) + " bytes, too short for the 8-byte header length");
    std::uint64_t length = 0;
    in_.read(reinterpret_cast<char*>(&length), 8);
    if (length > size - 8) {
      throw FormatError(file, "truncated: the header length says " + std::to_string(length) + " bytes but only " +
                                  std::to_string(size - 8) + " follow");
    }
    std::string header(static_cast<std::size_t>(length), '\0');
    if (!in_.read(header.data(), static_cast<std::streamsize>(length))) throw FormatError(file, "read error in the header");
    data_start_ = 8 + length;
    layout_ = Safetensors::parse_header(header, size - data_start_, file);
    for (std::size_t k = 0; k < layout_.tensors.size(); ++k) index_.emplace(layout_.tensors[k].name, k);
  }

  const std::filesystem::path& file() const noexcept { return file_; }
  const std::map<std::string, std::string>& metadata() const noexcept { return layout_.metadata; }
  bool contains(std::string_view name) const { return index_.find(name) != index_.end(); }
  /// Names of all tensors, in the order of their data.
  std::vector<std::string> names() const {
    std::vector<std::string> out;
    for (const auto& p : layout_.tensors) out.push_back(p.name);
    return out;
  }
  /// A tensor's dtype and shape (its bytes are not read); throws FormatError if there is none.
  const TensorData& describe(std::string_view name) const { return place(name).tensor; }

  /// Reads one tensor's bytes from the file.
  TensorData read(std::string_view name) {
    const Safetensors::Placed& p = place(name);
    TensorData t = p.tensor;
    t.bytes.resize(static_cast<std::size_t>(p.end - p.begin));
    in_.clear();
    in_.seekg(static_cast<std::streamoff>(data_start_ + p.begin));
    if (!t.bytes.empty() && !in_.read(reinterpret_cast<char*>(t.bytes.data()), static_cast<std::streamsize>(t.bytes.size()))) {
      throw FormatError(file_, "read error in tensor '" + std::string(name) + "' (the file changed since it was opened?)");
    }
    return t;
  }

  /// One tensor's values converted to T (as Safetensors::get_converted converts them).
  template <class T>
  std::vector<T> read_converted(std::string_view name) {
    Safetensors one;
    one.add(std::string(name), read(name));
    return one.get_converted<T>(name);
  }

 private:
  const Safetensors::Placed& place(std::string_view name) const {
    const auto it = index_.find(name);
    if (it == index_.end()) throw FormatError(file_, "no tensor named '" + std::string(name) + "'");
    return layout_.tensors[it->second];
  }

  std::filesystem::path file_;
  std::ifstream in_;
  std::uint64_t data_start_ = 0;
  Safetensors::Layout layout_;
  std::map<std::string, std::size_t, std::less<>> index_;
};

}  // namespace hpf::io

#endif  // HPF_IO_SAFETENSORS_READER_HPP
