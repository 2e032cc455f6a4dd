// SPDX-License-Identifier: MIT
// libFuzzer target for the safetensors readers: hpf::io::Safetensors::parse (include/hpf/io/
// safetensors.hpp; behind Safetensors::load and load_network_tensors) and the checkpoint loader's
// hpf::io::SafetensorsReader (io/safetensors_reader.hpp), which reads the same file tensor by
// tensor. Each input is a whole file's bytes; the reader gets it as a scratch file.
//
// Documented outcomes: a Safetensors whose tensors can all be read (get_converted; FormatError
// only for F16/BF16, which hpf does not convert; get<T> for the tensor's own type) and which
// serializes to a file that parses back to the same names, dtypes, shapes, bytes and metadata; or
// hpf::io::FormatError. SafetensorsReader accepts exactly the files parse accepts and reads the
// same tensors. Anything else (another exception, a crash, a sanitizer report, an allocation over
// -malloc_limit_mb, a hang) is a finding.
#include <fuzz/scratch.hpp>
#include <hpf/io/safetensors.hpp>
#include <hpf/io/safetensors_reader.hpp>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <span>
#include <string>
#include <vector>


namespace {

const std::filesystem::path& scratch_file() {
  static const std::filesystem::path file = hpf_fuzz::scratch_path("hpf_fuzz_safetensors", ".safetensors");
  return file;
}

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

// The checkpoint loader's way: header checked against the file's length, tensors read one by one.
void read_piecewise(const std::uint8_t* data, std::size_t size, const std::optional<hpf::io::Safetensors>& parsed) {
  const std::filesystem::path& file = scratch_file();
  hpf_fuzz::write_scratch(file, data, size);
  try {
    hpf::io::SafetensorsReader reader(file);
    check(parsed.has_value());
    check(reader.names() == parsed->names() && reader.metadata() == parsed->metadata());
    for (const std::string& name : reader.names()) {
      const hpf::io::TensorData read = reader.read(name), &expected = parsed->at(name);
      check(read.dtype == expected.dtype && read.shape == expected.shape && read.bytes == expected.bytes);
      check(reader.describe(name).shape == expected.shape);
    }
  } catch (const hpf::io::FormatError&) {
    check(!parsed.has_value());
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::span<const std::byte> bytes(reinterpret_cast<const std::byte*>(data), size);
  std::optional<hpf::io::Safetensors> parsed;
  try {
    parsed = hpf::io::Safetensors::parse(bytes);
  } catch (const hpf::io::FormatError&) {
  }
  read_piecewise(data, size, parsed);
  if (!parsed) return 0;
  const hpf::io::Safetensors& file = *parsed;
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
