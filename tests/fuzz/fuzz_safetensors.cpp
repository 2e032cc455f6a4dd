// SPDX-License-Identifier: MIT
// libFuzzer target for hpf::io::Safetensors::parse (include/hpf/io/safetensors.hpp), the reader
// behind Safetensors::load and load_network_tensors: each input is a whole file's bytes.
//
// Documented outcomes: a Safetensors whose tensors can all be read (get_converted; FormatError
// only for F16/BF16, which hpf does not convert; get<T> for the tensor's own type) and which
// serializes to a file that parses back to the same names, dtypes, shapes, bytes and metadata; or
// hpf::io::FormatError. Anything else (another exception, a crash, a sanitizer report, an
// allocation over -malloc_limit_mb, a hang) is a finding.
#include <hpf/io/safetensors.hpp>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <span>
#include <string>
#include <vector>

namespace {

void check(bool condition) {
  if (!condition) std::abort();
}

void read_every_tensor(const hpf::io::Safetensors& file) {
  using hpf::io::Dtype;
  for (const std::string& name : file.names()) {
    const hpf::io::TensorData& tensor = file.at(name);
    check(tensor.bytes.size() == tensor.elements() * hpf::io::dtype_size(tensor.dtype));
    try {
      check(file.get_converted<double>(name).size() == tensor.elements());
      check(tensor.dtype != Dtype::F16 && tensor.dtype != Dtype::BF16);
    } catch (const hpf::io::FormatError&) {
      check(tensor.dtype == Dtype::F16 || tensor.dtype == Dtype::BF16);
    }
    switch (tensor.dtype) {
      case Dtype::F32: check(file.get<float>(name).size() == tensor.elements()); break;
      case Dtype::F64: check(file.get<double>(name).size() == tensor.elements()); break;
      case Dtype::I64: check(file.get<std::int64_t>(name).size() == tensor.elements()); break;
      case Dtype::BOOL: check(file.get<bool>(name).size() == tensor.elements()); break;
      default: break;
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::span<const std::byte> bytes(reinterpret_cast<const std::byte*>(data), size);
  hpf::io::Safetensors file;
  try {
    file = hpf::io::Safetensors::parse(bytes);
  } catch (const hpf::io::FormatError&) {
    return 0;
  }
  read_every_tensor(file);
  // What was loaded saves and loads back unchanged.
  const std::vector<std::byte> saved = file.serialize();
  const hpf::io::Safetensors again = hpf::io::Safetensors::parse(saved);
  check(again.names() == file.names());
  check(again.metadata() == file.metadata());
  for (const std::string& name : file.names()) {
    const hpf::io::TensorData &a = file.at(name), &b = again.at(name);
    check(a.dtype == b.dtype && a.shape == b.shape && a.bytes == b.bytes);
  }
  return 0;
}
