// SPDX-License-Identifier: MIT
// libFuzzer target for hpf::data::read_idx and read_idx_header (include/hpf/data/idx.hpp).
//
// Each input is a file's bytes, written to a scratch file and read the way a dataset loader reads
// it: whole, with a stride (shards), and header only; then the same bytes gzip-compressed, so that
// mutations of plain IDX files also reach the reader through zlib. The documented outcomes are an
// IdxArray consistent with its header or hpf::data::DataError; anything else (another exception,
// a crash, a sanitizer report, an allocation over -malloc_limit_mb, a hang) is a finding.
#include <hpf/data/error.hpp>
#include <hpf/data/idx.hpp>

#include <fuzz/scratch.hpp>

#include <zlib.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>


namespace {

const std::filesystem::path& scratch_file() {
  static const std::filesystem::path file = hpf_fuzz::scratch_path("hpf_fuzz_idx", ".idx");
  return file;
}

void write_file(const std::filesystem::path& file, const std::uint8_t* data, std::size_t size) {
  hpf_fuzz::write_scratch(file, data, size);
}

// gzip (RFC 1952) of the bytes, as gzip(1) writes it.
std::vector<std::uint8_t> gzip(const std::uint8_t* data, std::size_t size) {
  z_stream z{};
  if (deflateInit2(&z, Z_BEST_SPEED, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) std::abort();
  std::vector<std::uint8_t> out(deflateBound(&z, static_cast<uLong>(size)));
  z.next_in = const_cast<Bytef*>(data);
  z.avail_in = static_cast<uInt>(size);
  z.next_out = out.data();
  z.avail_out = static_cast<uInt>(out.size());
  if (deflate(&z, Z_FINISH) != Z_STREAM_END) std::abort();
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}

void check(bool condition) {
  if (!condition) std::abort();
}

// Reads the scratch file as a loader would; only DataError may escape the reader.
void read_all_ways(const std::filesystem::path& file) {
  using hpf::data::DataError;
  std::vector<std::size_t> dims;
  try {
    dims = hpf::data::read_idx_header(file).dims;
    check(!dims.empty());
    for (std::size_t d : dims) check(d != 0);
  } catch (const DataError&) {
  }
  for (const auto& [stride, offset] : {std::pair<std::size_t, std::size_t>{1, 0}, {2, 1}}) {
    try {
      const hpf::data::IdxArray array = hpf::data::read_idx(file, stride, offset);
      // A successful read agrees with the header and holds exactly the kept items.
      check(array.dims == dims);
      const std::size_t kept = array.items() > offset ? (array.items() - offset + stride - 1) / stride : 0;
      check(array.bytes.size() == kept * array.item_bytes());
    } catch (const DataError&) {
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::filesystem::path& file = scratch_file();
  write_file(file, data, size);
  read_all_ways(file);
  const bool gzipped = size >= 2 && data[0] == 0x1f && data[1] == 0x8b;
  if (!gzipped) {  // the same content as a .gz file
    const std::vector<std::uint8_t> compressed = gzip(data, size);
    write_file(file, compressed.data(), compressed.size());
    read_all_ways(file);
  }
  return 0;
}
