#include <hpf/data/error.hpp>
#include <hpf/data/idx.hpp>

#include <data/idx_files.hpp>

#include <doctest/doctest.h>

#include <string>

using hpf::data::DataError;
using hpf::data::read_idx;
using hpf_test::contains;
using hpf_test::idx_bytes;

namespace {

// The DataError message that reading `file` gives; checks it names the file's full path.
std::string idx_error(const std::filesystem::path& file) {
  const std::string message = hpf_test::message_of<DataError>([&] { read_idx(file); });
  CHECK_MESSAGE(contains(message, std::filesystem::absolute(file).string()), message);
  return message;
}

}  // namespace

TEST_CASE("read_idx: parses raw and gzip files alike") {
  hpf_test::TempDir dir;
  const auto data = hpf_test::pattern(5 * 3 * 4);
  const auto bytes = idx_bytes({5, 3, 4}, data);
  hpf_test::write_raw(dir / "a.idx", bytes);
  hpf_test::write_gz(dir / "a.idx.gz", bytes);
  for (const char* name : {"a.idx", "a.idx.gz"}) {
    INFO("file ", std::string(name));
    const auto array = read_idx(dir / name);
    CHECK(array.dims == std::vector<std::size_t>{5, 3, 4});
    CHECK(array.items() == 5);
    CHECK(array.item_bytes() == 12);
    CHECK(array.bytes == data);
    const auto header = hpf::data::read_idx_header(dir / name);
    CHECK(header.dims == array.dims);
    CHECK(header.bytes.empty());
  }
  SUBCASE("rank 1 (labels)") {
    hpf_test::write_gz(dir / "l.gz", idx_bytes({4}, {3, 1, 4, 1}));
    const auto labels = read_idx(dir / "l.gz");
    CHECK(labels.dims == std::vector<std::size_t>{4});
    CHECK(labels.item_bytes() == 1);
    CHECK(labels.bytes == std::vector<std::uint8_t>{3, 1, 4, 1});
  }
  SUBCASE("a stride keeps every stride-th item from offset") {
    const auto odd = read_idx(dir / "a.idx.gz", 2, 1);  // items 1, 3
    CHECK(odd.dims == std::vector<std::size_t>{5, 3, 4});
    std::vector<std::uint8_t> expected(data.begin() + 12, data.begin() + 24);
    expected.insert(expected.end(), data.begin() + 36, data.begin() + 48);
    CHECK(odd.bytes == expected);
    CHECK(read_idx(dir / "a.idx", 7, 6).bytes.empty());  // more shards than items
    CHECK_THROWS_AS(read_idx(dir / "a.idx", 2, 2), std::invalid_argument);
  }
}

TEST_CASE("read_idx: a large gzip file is read in chunks, with a stride") {
  hpf_test::TempDir dir;
  const auto data = hpf_test::pattern(3000 * 28 * 28);  // several 1 MiB chunks
  hpf_test::write_gz(dir / "big.gz", idx_bytes({3000, 28, 28}, data));
  CHECK(read_idx(dir / "big.gz").bytes == data);
  const auto third = read_idx(dir / "big.gz", 3, 2);
  REQUIRE(third.bytes.size() == 1000 * 784);
  CHECK(std::equal(third.bytes.begin() + 999 * 784, third.bytes.end(), data.begin() + 2999 * 784));
}

TEST_CASE("read_idx: malformed headers") {
  hpf_test::TempDir dir;
  SUBCASE("bad magic number") {
    auto bytes = idx_bytes({2}, {0, 1});
    bytes[1] = 0x01;
    hpf_test::write_raw(dir / "magic.idx", bytes);
    CHECK(contains(idx_error(dir / "magic.idx"), "bad magic number 0x00010801"));
  }
  SUBCASE("a gzip file whose IDX content is wrong") {
    hpf_test::write_gz(dir / "text.gz", {'h', 'e', 'l', 'l', 'o'});
    CHECK(contains(idx_error(dir / "text.gz"), "bad magic number 0x68656C6C"));
  }
  SUBCASE("unsupported type code") {
    hpf_test::write_raw(dir / "float.idx", idx_bytes({1}, {0, 0, 0, 0}, 0x0D));
    const auto message = idx_error(dir / "float.idx");
    CHECK(contains(message, "unsupported IDX type code 0x0D (float32)"));
    CHECK(contains(message, "only 0x08 (unsigned byte)"));
  }
  SUBCASE("zero rank") {
    hpf_test::write_raw(dir / "rank0.idx", idx_bytes({}, {}));
    CHECK(contains(idx_error(dir / "rank0.idx"), "zero dimensions"));
  }
  SUBCASE("a dimension is zero") {
    hpf_test::write_gz(dir / "zero.gz", idx_bytes({3, 0, 2}, {}));
    CHECK(contains(idx_error(dir / "zero.gz"), "dimension 1 of 3 x 0 x 2 is zero"));
  }
  SUBCASE("truncated header") {
    hpf_test::write_raw(dir / "short.idx", {0, 0, 8, 3, 0, 0, 0, 5});
    CHECK(contains(idx_error(dir / "short.idx"), "truncated: expected 16 bytes of header, file holds 8"));
  }
  SUBCASE("absurd dimensions allocate nothing up front") {
    // 4 billion^4 bytes overflows; 4 billion^2 does not, but the file holds 3 bytes of data.
    hpf_test::write_raw(dir / "huge.idx", idx_bytes({0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFF}, {1, 2, 3}));
    CHECK(contains(idx_error(dir / "huge.idx"), "more data than can be addressed"));
    hpf_test::write_gz(dir / "big.gz", idx_bytes({0xFFFFFFFF, 0xFFFFFFFF}, {1, 2, 3}));
    CHECK(contains(idx_error(dir / "big.gz"),
                   "truncated: expected 18446744065119617025 bytes of data, file holds 3"));
  }
}

TEST_CASE("read_idx: truncated data") {
  hpf_test::TempDir dir;
  auto bytes = idx_bytes({3, 2, 2}, hpf_test::pattern(12));
  bytes.resize(bytes.size() - 2);
  SUBCASE("raw") {
    hpf_test::write_raw(dir / "cut.idx", bytes);
    CHECK(contains(idx_error(dir / "cut.idx"), "truncated: expected 12 bytes of data, file holds 10"));
  }
  SUBCASE("a complete gzip stream of too little data") {
    hpf_test::write_gz(dir / "cut.gz", bytes);
    CHECK(contains(idx_error(dir / "cut.gz"), "truncated: expected 12 bytes of data, file holds 10"));
  }
  SUBCASE("a gzip stream cut short") {
    hpf_test::write_damaged_gz(dir / "half.gz", idx_bytes({200, 100}, hpf_test::pattern(200 * 100)),
                               [](auto& gz) { gz.resize(gz.size() / 2); });
    const auto message = idx_error(dir / "half.gz");
    CHECK(contains(message, "truncated: expected 20000 bytes of data, file holds "));
    CHECK(contains(message, "(zlib: unexpected end of file)"));
  }
  SUBCASE("a gzip stream missing only its trailer") {
    hpf_test::write_damaged_gz(dir / "notrailer.gz", idx_bytes({4}, {1, 2, 3, 4}),
                               [](auto& gz) { gz.resize(gz.size() - 4); });
    CHECK(contains(idx_error(dir / "notrailer.gz"), "truncated gzip stream"));
  }
}

TEST_CASE("read_idx: corrupt gzip data") {
  hpf_test::TempDir dir;
  SUBCASE("damaged compressed bytes") {
    hpf_test::write_damaged_gz(dir / "bad.gz", idx_bytes({100, 100}, hpf_test::pattern(100 * 100, 97)), [](auto& gz) {
      for (std::size_t k = gz.size() / 3; k < gz.size() / 3 + 16; ++k) gz[k] ^= 0x5A;
    });
    CHECK(contains(idx_error(dir / "bad.gz"), "unreadable or corrupt gzip data (zlib: "));
  }
  SUBCASE("a wrong CRC in the trailer") {
    hpf_test::write_damaged_gz(dir / "crc.gz", idx_bytes({4}, {1, 2, 3, 4}), [](auto& gz) { gz[gz.size() - 8] ^= 0xFF; });
    CHECK(contains(idx_error(dir / "crc.gz"), "corrupt gzip data (zlib: incorrect data check)"));
  }
}

TEST_CASE("read_idx: missing or unreadable file") {
  hpf_test::TempDir dir;
  CHECK(contains(idx_error(dir / "absent.gz"), "cannot open: No such file or directory"));
  CHECK(contains(idx_error(dir.path()), "corrupt"));  // a directory opens, but cannot be read
  const auto relative = std::filesystem::relative(dir / "absent.gz");
  const auto message = hpf_test::message_of<DataError>([&] { read_idx(relative); });
  CHECK_MESSAGE(contains(message, (dir / "absent.gz").string()), message);
}
