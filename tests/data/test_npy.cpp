#include <hpf/data/error.hpp>
#include <hpf/data/npy.hpp>
#include <hpf/data/npy_dataset.hpp>
#include <hpf/layers/dense.hpp>
#include <hpf/layers/flatten.hpp>
#include <hpf/layers/softmax_cross_entropy.hpp>
#include <hpf/model/sequential.hpp>
#include <hpf/parallel/stage_engine.hpp>

#include <data/npy_files.hpp>

#include <doctest/doctest.h>

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

using hpf::data::DataError;
using hpf::data::read_npy;
using hpf_test::contains;
using hpf_test::npy_data;
using hpf_test::npy_dict;
using hpf_test::npy_file;
using hpf_test::write_npy;
using hpf_test::write_raw;

namespace {

// The DataError message that reading `file` gives; checks it names the file's full path.
std::string npy_error(const std::filesystem::path& file) {
  const std::string message = hpf_test::message_of<DataError>([&] { read_npy<float>(file); });
  CHECK_MESSAGE(contains(message, std::filesystem::absolute(file).lexically_normal().string()), message);
  return message;
}

// Files numpy wrote (tests/data/make_npy_files.py).
const std::filesystem::path numpy_files = HPF_TEST_NPY_FILES;

}  // namespace

TEST_CASE_TEMPLATE("read_npy: every dtype, format versions 1.0, 2.0 and 3.0", Elem, float, double, std::int8_t,
                   std::int16_t, std::int32_t, std::int64_t, std::uint8_t, std::uint16_t, std::uint32_t,
                   std::uint64_t) {
  constexpr bool is_float = std::is_floating_point_v<Elem>;
  const std::string descr = std::string(sizeof(Elem) == 1 ? "|" : "<") +
                            (is_float ? "f" : std::is_signed_v<Elem> ? "i" : "u") + std::to_string(sizeof(Elem));
  // 4 rows of 2 x 3; negative values only for signed types.
  std::vector<double> values(24);
  for (std::size_t k = 0; k < values.size(); ++k) {
    values[k] = std::is_signed_v<Elem> ? static_cast<double>(k) - 10 : static_cast<double>(k) * 5;
    if (is_float) values[k] += 0.25;
  }
  hpf_test::TempDir dir;
  for (int major : {1, 2, 3}) {
    INFO("dtype ", descr, ", version ", major);
    write_npy<Elem>(dir / "a.npy", descr, {4, 2, 3}, values, major);
    const auto header = hpf::data::read_npy_header(dir / "a.npy");
    CHECK(header.descr == descr);
    CHECK(header.item_size == sizeof(Elem));
    CHECK(header.shape == std::vector<std::size_t>{4, 2, 3});
    CHECK(header.major_version == major);
    CHECK(header.data_offset % 64 == 0);
    CHECK(header.rows() == 4);
    CHECK(header.row_elements() == 6);
    const auto as_double = read_npy<double>(dir / "a.npy");
    CHECK(as_double.values == values);
    if constexpr (!is_float) {
      const auto as_int = read_npy<std::int64_t>(dir / "a.npy");
      for (std::size_t k = 0; k < values.size(); ++k) CHECK(as_int.values[k] == static_cast<std::int64_t>(values[k]));
    }
  }
  SUBCASE("1-D and 0-d arrays") {
    write_npy<Elem>(dir / "l.npy", descr, {5}, std::vector<int>{3, 1, 4, 1, 5});
    CHECK(read_npy<float>(dir / "l.npy").values == std::vector<float>{3, 1, 4, 1, 5});
    write_npy<Elem>(dir / "s.npy", descr, {}, std::vector<int>{7});
    const auto scalar = read_npy<float>(dir / "s.npy");
    CHECK(scalar.header.shape.empty());
    CHECK(scalar.values == std::vector<float>{7});
  }
}

TEST_CASE("read_npy: bool, integers that do not fit, empty arrays") {
  hpf_test::TempDir dir;
  write_npy<std::uint8_t>(dir / "b.npy", "|b1", {3}, std::vector<int>{1, 0, 1});
  CHECK(read_npy<std::int32_t>(dir / "b.npy").values == std::vector<std::int32_t>{1, 0, 1});
  // Narrowing saturates, so a huge label cannot wrap into the class range.
  write_npy<std::uint64_t>(dir / "u8.npy", "<u8", {2}, std::vector<std::uint64_t>{std::numeric_limits<std::uint64_t>::max(), 2});
  CHECK(read_npy<std::int32_t>(dir / "u8.npy").values ==
        std::vector<std::int32_t>{std::numeric_limits<std::int32_t>::max(), 2});
  write_npy<std::int64_t>(dir / "i8.npy", "<i8", {1}, std::vector<std::int64_t>{-(std::int64_t{1} << 40)});
  CHECK(read_npy<std::int32_t>(dir / "i8.npy").values == std::vector<std::int32_t>{std::numeric_limits<std::int32_t>::min()});
  write_raw(dir / "empty.npy", npy_file(npy_dict("<f4", {0, 3}), {}));
  const auto empty = read_npy<float>(dir / "empty.npy");
  CHECK(empty.header.rows() == 0);
  CHECK(empty.values.empty());
}

TEST_CASE("read_npy: files numpy wrote") {
  const auto inputs = read_npy<float>(numpy_files / "inputs-f4-5x3.npy");
  CHECK(inputs.header.descr == "<f4");
  CHECK(inputs.header.shape == std::vector<std::size_t>{5, 3});
  REQUIRE(inputs.values.size() == 15);
  for (std::size_t i = 0; i < 5; ++i) {
    for (std::size_t j = 0; j < 3; ++j) CHECK(inputs.values[i * 3 + j] == static_cast<float>(i) + static_cast<float>(j) / 4);
  }
  const auto v2 = read_npy<float>(numpy_files / "inputs-f8-v2.npy");
  CHECK(v2.header.major_version == 2);
  CHECK(v2.header.descr == "<f8");
  CHECK(v2.values == inputs.values);
  CHECK(read_npy<std::int32_t>(numpy_files / "labels-i8-5.npy").values == std::vector<std::int32_t>{3, 1, 4, 1, 5});
  const auto bools = read_npy<std::int32_t>(numpy_files / "labels-b1-v3.npy");
  CHECK(bools.header.major_version == 3);
  CHECK(bools.values == std::vector<std::int32_t>{1, 0, 1});
  const auto images = read_npy<float>(numpy_files / "images-u1-4x2x3x3.npy", 2, 1);  // rows 1, 3
  CHECK(images.header.descr == "|u1");
  REQUIRE(images.values.size() == 36);
  CHECK(images.values[0] == 18);
  CHECK(images.values[35] == 71);
  CHECK(contains(npy_error(numpy_files / "fortran-f4.npy"),
                 "fortran_order is True; hpf reads C-order arrays (save numpy.ascontiguousarray(a))"));
  CHECK(contains(npy_error(numpy_files / "big-endian-f4.npy"),
                 "dtype '>f4' is big-endian; hpf reads little-endian data (save a.astype('<f4'))"));
  CHECK(contains(npy_error(numpy_files / "float16.npy"), "unsupported dtype '<f2'"));
}

TEST_CASE("read_npy: a stride keeps every stride-th row from offset") {
  hpf_test::TempDir dir;
  SUBCASE("small rows, read in blocks") {
    std::vector<int> values(1000 * 3);
    for (std::size_t k = 0; k < values.size(); ++k) values[k] = static_cast<int>(k);
    write_npy<std::int32_t>(dir / "a.npy", "<i4", {1000, 3}, values);
    for (std::size_t stride : {1, 2, 3, 7, 999, 1000, 1500}) {
      for (std::size_t offset = 0; offset < std::min<std::size_t>(stride, 4); ++offset) {
        INFO("stride ", stride, ", offset ", offset);
        const auto array = read_npy<std::int64_t>(dir / "a.npy", stride, offset);
        std::vector<std::int64_t> expected;
        for (std::size_t i = offset; i < 1000; i += stride) {
          for (std::size_t e = 0; e < 3; ++e) expected.push_back(static_cast<std::int64_t>(i * 3 + e));
        }
        CHECK(array.values == expected);
      }
    }
  }
  SUBCASE("large rows, reached by seeking; several 1 MiB blocks") {
    const std::size_t rows = 40, per_row = 100000;  // 400 kB rows of float32
    std::vector<float> values(rows * per_row);
    for (std::size_t k = 0; k < values.size(); ++k) values[k] = static_cast<float>(k % 1000003);
    write_npy<float>(dir / "big.npy", "<f4", {rows, per_row}, values);
    CHECK(read_npy<float>(dir / "big.npy").values == values);
    const auto third = read_npy<float>(dir / "big.npy", 3, 2);  // rows 2, 5, ..., 38
    REQUIRE(third.values.size() == 13 * per_row);
    for (std::size_t k = 0; k < 13; ++k) {
      CHECK(std::equal(third.values.begin() + k * per_row, third.values.begin() + (k + 1) * per_row,
                       values.begin() + (2 + 3 * k) * per_row));
    }
  }
  CHECK_THROWS_AS(read_npy<float>(numpy_files / "inputs-f4-5x3.npy", 2, 2), std::invalid_argument);
}

TEST_CASE("read_npy: missing, unreadable or malformed files") {
  hpf_test::TempDir dir;
  const auto good = npy_file(npy_dict("<f4", {2, 3}), npy_data<float>(std::vector<float>(6, 1.5f)));
  const auto write = [&](const std::string& name, const std::vector<std::uint8_t>& bytes) {
    write_raw(dir / name, bytes);
    return npy_error(dir / name);
  };
  const auto with_dict = [&](const std::string& dict, std::size_t data_bytes = 24) {
    return write("dict.npy", npy_file(dict, std::vector<std::uint8_t>(data_bytes)));
  };
  SUBCASE("missing file, directory") {
    CHECK(contains(npy_error(dir / "absent.npy"), "cannot open: No such file or directory"));
    CHECK(contains(npy_error(dir.path()), "not a regular file"));
  }
  SUBCASE("bad magic") {
    CHECK(contains(write("empty.npy", {}), "not a .npy file: it starts with '', not '\\x93NUMPY'"));
    CHECK(contains(write("text.npy", {'h', 'e', 'l', 'l', 'o', ' ', 'w'}), "not a .npy file: it starts with 'hello '"));
    auto pickle = good;
    pickle[0] = 0x80;
    CHECK(contains(write("pickle.npy", pickle), "it starts with '\\x80NUMPY'"));
  }
  SUBCASE("unsupported version") {
    auto v4 = good;
    v4[6] = 4;
    CHECK(contains(write("v4.npy", v4), "unsupported .npy format version 4.0 (hpf reads 1.0, 2.0 and 3.0)"));
    v4[6] = 1;
    v4[7] = 1;
    CHECK(contains(write("v11.npy", v4), "unsupported .npy format version 1.1"));
  }
  SUBCASE("truncated header") {
    CHECK(contains(write("cut7.npy", std::vector<std::uint8_t>(good.begin(), good.begin() + 7)),
                   "truncated: the file ends inside the .npy format version"));
    CHECK(contains(write("cut9.npy", std::vector<std::uint8_t>(good.begin(), good.begin() + 9)),
                   "truncated: the file ends inside the .npy header length"));
    CHECK(contains(write("cut40.npy", std::vector<std::uint8_t>(good.begin(), good.begin() + 40)),
                   "truncated header: it declares 118 bytes after the 10-byte prefix, the file holds 30"));
    auto huge = npy_file(npy_dict("<f4", {2}), npy_data<float>(std::vector<float>(2)), 2);
    for (std::size_t k = 8; k < 12; ++k) huge[k] = 0xFF;  // a length of 4 GiB - 1 allocates nothing
    CHECK(contains(write("huge.npy", huge), "the .npy header claims 4294967295 bytes, more than hpf reads"));
  }
  SUBCASE("fortran order") {
    CHECK(contains(with_dict(npy_dict("<f4", {2, 3}, true)), "fortran_order is True; hpf reads C-order arrays"));
  }
  SUBCASE("unsupported dtype") {
    CHECK(contains(with_dict(npy_dict("<c8", {2, 3}), 48), "unsupported dtype '<c8'; hpf reads float32, float64"));
    CHECK(contains(with_dict(npy_dict("|O", {2, 3})), "unsupported dtype '|O'"));
    CHECK(contains(with_dict("{'descr': [('x', '<f4')], 'fortran_order': False, 'shape': (2,), }", 8),
                   "'descr' is not a string: structured dtypes"));
  }
  SUBCASE("shape not matching the file's size") {
    CHECK(contains(with_dict(npy_dict("<f4", {2, 3}), 20),
                   "shape (2, 3) of float32 describes 24 bytes of data, but the file holds 20 after its 128-byte header "
                   "(truncated?)"));
    CHECK(contains(with_dict(npy_dict("<f8", {2}), 24),
                   "shape (2,) of float64 describes 16 bytes of data, but the file holds 24"));
    CHECK(contains(with_dict(npy_dict("<f8", {1ull << 40, 1ull << 40})), "describes more data than can be addressed"));
    CHECK(contains(with_dict("{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999999,), }"),
                   "a dimension too large to address"));
  }
  SUBCASE("not the three keys of a .npy dict") {
    CHECK(contains(with_dict("{'descr': '<f4', 'shape': (2, 3), }"), "no 'fortran_order'"));
    CHECK(contains(with_dict("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), 'x': 1}"),
                   "unexpected key 'x' (a .npy header has exactly 'descr', 'fortran_order' and 'shape')"));
    CHECK(contains(with_dict("{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (2, 3)}"),
                   "key 'descr' appears twice"));
    CHECK(contains(with_dict("['descr', '<f4']"), "expected '{' (the header is a Python dict literal) at byte 0"));
    CHECK(contains(with_dict("{'descr': '<f4', 'fortran_order': 0, 'shape': (2, 3)}"),
                   "'fortran_order' is neither True nor False"));
    CHECK(contains(with_dict("{'descr': '<f4', 'fortran_order': False, 'shape': [2, 3]}"), "expected '(' (the shape"));
    CHECK(contains(with_dict("{'descr': '<f4', 'fortran_order': False, 'shape': (6)}"),
                   "a one-element shape needs a trailing comma"));
    CHECK(contains(with_dict("{'descr': '<f4', 'fortran_order': False, 'shape': (2, -3)}"),
                   "expected a non-negative integer in the shape"));
    CHECK(contains(with_dict("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3)} x"),
                   "expected only spaces and a final newline after the dict"));
    CHECK(contains(with_dict("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3)"),
                   "expected ',' or '}' after the value of 'shape' at byte "));
    CHECK(contains(with_dict("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3)"),
                   " of '{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3)'"));  // the header, less padding
  }
  SUBCASE("float data read as integers") {
    write_raw(dir / "f.npy", good);
    CHECK(contains(hpf_test::message_of<DataError>([&] { read_npy<std::int64_t>(dir / "f.npy"); }),
                   "holds float32 values where integers are expected"));
  }
  SUBCASE("double quotes and extra spaces are still a Python dict") {
    write_raw(dir / "q.npy", npy_file("{ \"shape\" : (2,3) , \"fortran_order\":False,\"descr\":\"<f4\"}",
                                      npy_data<float>(std::vector<float>(6, 2.0f))));
    CHECK(read_npy<float>(dir / "q.npy").values == std::vector<float>(6, 2.0f));
  }
}

TEST_CASE("load_npy_dataset: inputs and class labels as a Shard of a Dataset") {
  hpf_test::TempDir dir;
  std::vector<float> inputs(10 * 2 * 3 * 4);
  for (std::size_t k = 0; k < inputs.size(); ++k) inputs[k] = static_cast<float>(k) / 8;
  std::vector<int> labels{0, 1, 2, 3, 4, 0, 1, 2, 3, 4};
  write_npy<float>(dir / "x4.npy", "<f4", {10, 2, 3, 4}, inputs);
  write_npy<float>(dir / "x2.npy", "<f4", {10, 24}, inputs);
  write_npy<float>(dir / "x3.npy", "<f4", {10, 6, 4}, inputs, 2);
  write_npy<std::uint8_t>(dir / "y.npy", "|u1", {10}, labels);
  write_npy<std::int64_t>(dir / "y2.npy", "<i8", {10, 1}, labels);

  const auto d = hpf::data::load_npy_dataset(dir / "x4.npy", dir / "y.npy", 5, {1, 3});
  CHECK(d.size() == 10);
  CHECK(d.local_size() == 3);  // samples 1, 4, 7
  CHECK(d.shape_text() == "2x3x4");
  CHECK(d.classes() == 5);
  CHECK(d.label(4) == 4);
  CHECK(d.label(7) == 2);
  std::vector<std::size_t> which{7};
  std::vector<float> out(24);
  d.gather(std::span<const std::size_t>(which), out.data());
  CHECK(out[0] == inputs[7 * 24]);
  CHECK(out[23] == inputs[7 * 24 + 23]);
  CHECK(hpf::data::load_npy_dataset(dir / "x2.npy", dir / "y2.npy", 5).shape_text() == "24x1x1");
  CHECK(hpf::data::load_npy_dataset(dir / "x3.npy", dir / "y.npy", 5).shape_text() == "1x6x4");

  SUBCASE("a pipeline stage's shard reads only the headers of the other file") {
    const auto first = hpf::data::load_npy_dataset(dir / "x4.npy", dir / "y.npy", 5, hpf::data::pipeline_shard(0, 2, 0, 2));
    CHECK(first.has_images());
    CHECK_FALSE(first.has_labels());
    CHECK(first.memory_bytes() == 5 * 24 * sizeof(float));
    const auto last = hpf::data::load_npy_dataset(dir / "x4.npy", dir / "y.npy", 5, hpf::data::pipeline_shard(1, 2, 1, 2));
    CHECK(last.memory_bytes() == 5 * sizeof(std::int32_t));
  }
  SUBCASE("regression targets") {
    write_npy<double>(dir / "t.npy", "<f8", {10, 2}, std::vector<double>(20, 0.5));
    const auto r = hpf::data::load_npy_regression(dir / "x2.npy", dir / "t.npy", {0, 2});
    CHECK(r.is_regression());
    CHECK(r.target_size() == 2);
    std::vector<std::size_t> two{2};
    float t[2];
    r.gather_targets(std::span<const std::size_t>(two), t);
    CHECK(t[1] == 0.5f);
  }

  const auto error = [&](auto load) {
    const std::string message = hpf_test::message_of<DataError>(load);
    CHECK_MESSAGE(contains(message, "hpf::data: "), message);
    return message;
  };
  const auto labels_path = (dir / "y.npy").string();
  SUBCASE("a missing file") {
    CHECK(contains(error([&] { hpf::data::load_npy_dataset(dir / "x4.npy", dir / "absent.npy", 5); }),
                   (dir / "absent.npy").string() + ": cannot open: No such file or directory"));
  }
  SUBCASE("labels count differing from inputs count") {
    write_npy<std::int64_t>(dir / "y9.npy", "<i8", {9}, std::vector<int>(9, 1));
    CHECK(contains(error([&] { hpf::data::load_npy_dataset(dir / "x4.npy", dir / "y9.npy", 5); }),
                   "input/labels count mismatch: " + (dir / "x4.npy").string() + " holds 10 samples but " +
                       (dir / "y9.npy").string() + " holds 9 labels"));
  }
  SUBCASE("a label out of range, on the shard that holds it") {
    labels[4] = 5;
    write_npy<std::int16_t>(dir / "bad.npy", "<i2", {10}, labels);
    const auto message = error([&] { hpf::data::load_npy_dataset(dir / "x4.npy", dir / "bad.npy", 5, {1, 3}); });
    CHECK(contains(message, (dir / "bad.npy").string() + ": label 5 of sample 4 is out of range [0, 5)"));
    CHECK_NOTHROW(hpf::data::load_npy_dataset(dir / "x4.npy", dir / "bad.npy", 5, {0, 3}));
    labels[4] = -1;
    write_npy<std::int16_t>(dir / "neg.npy", "<i2", {10}, labels);
    CHECK(contains(error([&] { hpf::data::load_npy_dataset(dir / "x4.npy", dir / "neg.npy", 5); }),
                   "label -1 of sample 4 is out of range [0, 5)"));
    // 2^32 + 1 would be 1 if narrowed first
    std::vector<std::int64_t> wide(10, 0);
    wide[9] = (std::int64_t{1} << 32) + 1;
    write_npy<std::int64_t>(dir / "wide.npy", "<i8", {10}, wide);
    CHECK(contains(error([&] { hpf::data::load_npy_dataset(dir / "x4.npy", dir / "wide.npy", 5); }),
                   "label 4294967297 of sample 9 is out of range [0, 5)"));
  }
  SUBCASE("float labels, labels of the wrong shape, inputs of the wrong rank") {
    write_npy<float>(dir / "fy.npy", "<f4", {10}, labels);
    CHECK(contains(error([&] { hpf::data::load_npy_dataset(dir / "x4.npy", dir / "fy.npy", 5); }),
                   "class labels must be integers, found float32 (for real-valued targets use "
                   "hpf::data::load_npy_regression)"));
    write_npy<std::int32_t>(dir / "y52.npy", "<i4", {5, 2}, labels);
    CHECK(contains(error([&] { hpf::data::load_npy_dataset(dir / "x4.npy", dir / "y52.npy", 5); }),
                   "expected n labels, shape (n,) or (n, 1), found (5, 2)"));
    CHECK(contains(error([&] { hpf::data::load_npy_dataset(dir / "y.npy", dir / "y.npy", 5); }),
                   labels_path + ": expected inputs of shape (n, features), (n, height, width) or (n, channels, height, "
                                 "width), found (10,)"));
    write_npy<float>(dir / "x0.npy", "<f4", {0, 3}, std::vector<float>{});
    CHECK(contains(error([&] { hpf::data::load_npy_dataset(dir / "x0.npy", dir / "y.npy", 5); }),
                   "holds no samples (shape (0, 3))"));
  }
}

TEST_CASE("load_npy_dataset: .npy inputs meet the model's input check as other datasets do") {
  // The check hpf::fit runs on every rank's data before any step (check_stage_datasets).
  const auto check = [](const hpf::data::Dataset& d, const hpf::NetworkFacts& facts) {
    return hpf_test::message_of<std::invalid_argument>(
        [&] { hpf::check_stage_dataset(d, "training", facts, hpf::StagePosition{.classifies = true, .model = "test"}); });
  };
  using Vector = hpf::Sequential<hpf::Input<12>, hpf::Dense<3>, hpf::SoftmaxCrossEntropy>;
  using Image = hpf::Sequential<hpf::Input<1, 3, 4>, hpf::Flatten, hpf::Dense<3>, hpf::SoftmaxCrossEntropy>;
  const auto vector = hpf::network_facts<Vector>(), image = hpf::network_facts<Image>();
  hpf_test::TempDir dir;
  write_npy<std::int32_t>(dir / "y.npy", "<i4", {4}, std::vector<int>{0, 1, 2, 0});
  write_npy<float>(dir / "x12.npy", "<f4", {4, 12}, std::vector<float>(48, 0.5f));
  write_npy<float>(dir / "x34.npy", "<f4", {4, 3, 4}, std::vector<float>(48, 0.5f));
  write_npy<float>(dir / "x134.npy", "<f4", {4, 1, 3, 4}, std::vector<float>(48, 0.5f));
  write_npy<float>(dir / "x314.npy", "<f4", {4, 3, 1, 4}, std::vector<float>(48, 0.5f));
  const auto load = [&](const char* inputs) { return hpf::data::load_npy_dataset(dir / inputs, dir / "y.npy", 3); };
  CHECK(check(load("x12.npy"), vector).empty());
  CHECK(check(load("x34.npy"), image).empty());
  CHECK(check(load("x134.npy"), image).empty());
  CHECK(check(load("x12.npy"), image) == "hpf: the training set's samples are 12x1x1 but the model's input is 1x3x4");
  CHECK(check(load("x314.npy"), image) == "hpf: the training set's samples are 3x1x4 but the model's input is 1x3x4");
  CHECK(check(load("x34.npy"), vector) == "hpf: the training set's samples are 1x3x4 but the model's input is 12");
}
