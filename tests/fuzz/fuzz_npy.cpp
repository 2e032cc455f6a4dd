// SPDX-License-Identifier: MIT
// libFuzzer target for hpf::data::read_npy_header, read_npy and load_npy_regression
// (include/hpf/data/npy.hpp, npy_dataset.hpp).
//
// Each input is a file's bytes, written to a scratch file and read the way a dataset loader reads
// it: header only, whole as float and as int64, with a stride (a shard), and as both files of a
// regression pair. The documented outcomes are an array consistent with its header or
// hpf::data::DataError; anything else (another exception, a crash, a sanitizer report, an
// allocation over -malloc_limit_mb, a hang) is a finding.
#include <hpf/data/error.hpp>
#include <hpf/data/npy.hpp>
#include <hpf/data/npy_dataset.hpp>

#include <fuzz/scratch.hpp>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <utility>

namespace {

void check(bool condition) {
  if (!condition) std::abort();
}

template <class T>
void read_strided(const std::filesystem::path& file, const std::optional<hpf::data::NpyHeader>& header,
                  std::size_t stride, std::size_t offset) {
  try {
    const auto array = hpf::data::read_npy<T>(file, stride, offset);
    // A successful read agrees with the header alone and holds exactly the kept rows.
    check(header.has_value());
    check(array.header.shape == header->shape && array.header.descr == header->descr);
    const std::size_t rows = array.header.rows();
    const std::size_t kept = rows > offset ? (rows - offset + stride - 1) / stride : 0;
    check(array.values.size() == kept * array.header.row_elements());
  } catch (const hpf::data::DataError&) {
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const std::filesystem::path file = hpf_fuzz::scratch_path("hpf_fuzz_npy", ".npy");
  hpf_fuzz::write_scratch(file, data, size);
  std::optional<hpf::data::NpyHeader> header;
  try {
    header = hpf::data::read_npy_header(file);
    check(header->data_offset <= size);
  } catch (const hpf::data::DataError&) {
  }
  for (const auto& [stride, offset] : {std::pair<std::size_t, std::size_t>{1, 0}, {3, 2}}) {
    read_strided<float>(file, header, stride, offset);
    read_strided<std::int64_t>(file, header, stride, offset);
  }
  try {
    const auto d = hpf::data::load_npy_regression(file, file, {1, 2});
    check(d.size() == header->rows());
  } catch (const hpf::data::DataError&) {
  }
  return 0;
}
