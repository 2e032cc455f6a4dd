// Helpers for the .npy tests: the bytes of a .npy file as numpy's writer lays them out.
#ifndef HPF_TESTS_DATA_NPY_FILES_HPP
#define HPF_TESTS_DATA_NPY_FILES_HPP

#include <data/idx_files.hpp>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace hpf_test {

/// The header dict numpy writes: {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }
inline std::string npy_dict(const std::string& descr, const std::vector<std::size_t>& shape, bool fortran = false) {
  std::string text = "{'descr': '" + descr + "', 'fortran_order': " + (fortran ? "True" : "False") + ", 'shape': (";
  for (std::size_t k = 0; k < shape.size(); ++k) text += (k ? ", " : "") + std::to_string(shape[k]);
  return text + (shape.size() == 1 ? ",), }" : "), }");
}

/// A .npy file: magic, version `major`.0, header length (2 bytes for version 1, else 4), `dict`
/// padded with spaces and a newline to a multiple of 64 bytes, then `data`.
inline std::vector<std::uint8_t> npy_file(const std::string& dict, const std::vector<std::uint8_t>& data, int major = 1) {
  const std::size_t prefix = major == 1 ? 10 : 12;
  std::string text = dict;
  while ((prefix + text.size() + 1) % 64 != 0) text += ' ';
  text += '\n';
  std::vector<std::uint8_t> bytes{0x93, 'N', 'U', 'M', 'P', 'Y', static_cast<std::uint8_t>(major), 0};
  for (std::size_t k = 0; k < prefix - 8; ++k) bytes.push_back(static_cast<std::uint8_t>(text.size() >> (8 * k)));
  // resize + memcpy rather than insert(char range): g++ 12 -O3 warns (stringop-overflow) on the latter.
  const std::size_t at = bytes.size();
  bytes.resize(at + text.size() + data.size());
  std::memcpy(bytes.data() + at, text.data(), text.size());
  if (!data.empty()) std::memcpy(bytes.data() + at + text.size(), data.data(), data.size());
  return bytes;
}

/// The little-endian bytes of `values` as Elem (this host is little-endian, as the tests assume).
template <class Elem, class Value>
std::vector<std::uint8_t> npy_data(const std::vector<Value>& values) {
  std::vector<std::uint8_t> bytes(values.size() * sizeof(Elem));
  for (std::size_t k = 0; k < values.size(); ++k) {
    const Elem e = static_cast<Elem>(values[k]);
    std::memcpy(bytes.data() + k * sizeof(Elem), &e, sizeof(Elem));
  }
  return bytes;
}

/// Writes a C-order array of Elem to `file`.
template <class Elem, class Value>
void write_npy(const std::filesystem::path& file, const std::string& descr, const std::vector<std::size_t>& shape,
               const std::vector<Value>& values, int major = 1) {
  write_raw(file, npy_file(npy_dict(descr, shape), npy_data<Elem>(values), major));
}

}  // namespace hpf_test

#endif  // HPF_TESTS_DATA_NPY_FILES_HPP
