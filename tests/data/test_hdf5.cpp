// load_hdf5_dataset / load_hdf5_regression in one process (MPI not initialised: HDF5's default
// driver), on files the test writes with HDF5's C API: every element type converted, a shard's rows
// and only the parts it keeps, and every bad input a DataError naming the file, without HDF5's
// error stack on stderr.
#include <hpf/data/error.hpp>
#include <hpf/data/hdf5_dataset.hpp>

#include <data/hdf5_files.hpp>

#include <doctest/doctest.h>

#include <hdf5.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <span>
#include <string>
#include <vector>

#include <fcntl.h>
#include <unistd.h>

using hpf::data::DataError;
using hpf_test::contains;
using hpf_test::Hdf5Layout;
using hpf_test::write_hdf5;

namespace {

// Values of sample i at element v, exact in every type the tests store (also uint8: i < 10, v < 24).
double value(std::size_t i, std::size_t v) { return static_cast<double>(i * 10 + v); }

std::vector<double> values(std::size_t samples, std::size_t per_sample) {
  std::vector<double> out(samples * per_sample);
  for (std::size_t i = 0; i < samples; ++i) {
    for (std::size_t v = 0; v < per_sample; ++v) out[i * per_sample + v] = value(i, v);
  }
  return out;
}

// Sample i's values as gather writes them, in [C][1][H*W] order: file order for one sample.
std::vector<float> gathered(const hpf::data::Dataset& d, std::size_t i) {
  std::vector<float> out(d.sample_size());
  const std::size_t one[] = {i};
  d.gather(std::span<const std::size_t>(one), out.data());
  return out;
}

// Everything written to stderr (file descriptor 2, where HDF5 prints) while f runs.
template <class F>
std::string stderr_of(F&& f) {
  std::fflush(stderr);
  char name[] = "/tmp/hpf_hdf5_stderr_XXXXXX";
  const int capture = ::mkstemp(name);
  const int saved = ::dup(2);
  ::dup2(capture, 2);
  f();
  std::fflush(stderr);
  ::dup2(saved, 2);
  ::close(saved);
  const std::string text = [&] {
    std::string t(4096, '\0');
    t.resize(static_cast<std::size_t>(std::max<::ssize_t>(0, ::pread(capture, t.data(), t.size(), 0))));
    return t;
  }();
  ::close(capture);
  ::unlink(name);
  return text;
}

}  // namespace

TEST_CASE_TEMPLATE("load_hdf5_dataset: float32, float64 and integer inputs, a shard's rows", Elem, float, double,
                   std::uint8_t, std::int16_t, std::int32_t, std::int64_t) {
  hpf_test::TempDir dir;
  const auto file = dir / "data.h5";
  write_hdf5<Elem>(file, "x4", {10, 2, 3, 4}, values(10, 24));
  write_hdf5<Elem>(file, "train/x2", {10, 24}, values(10, 24));
  write_hdf5<Elem>(file, "x3", {10, 6, 4}, values(10, 24));
  write_hdf5<std::uint8_t>(file, "y", {10}, std::vector<int>{0, 1, 2, 3, 4, 0, 1, 2, 3, 4});
  write_hdf5<std::int64_t>(file, "train/y", {10, 1}, std::vector<int>{4, 3, 2, 1, 0, 4, 3, 2, 1, 0});

  const auto d = hpf::data::load_hdf5_dataset(file, "x4", "y", 5, {1, 3});
  CHECK(d.size() == 10);
  CHECK(d.local_size() == 3);  // samples 1, 4, 7
  CHECK(d.shape_text() == "2x3x4");
  CHECK(d.classes() == 5);
  CHECK(d.memory_bytes() == 3 * (24 * sizeof(float) + sizeof(std::int32_t)));
  for (std::size_t i : {1, 4, 7}) {
    CHECK(d.label(i) == static_cast<std::int32_t>(i % 5));
    const auto x = gathered(d, i);
    for (std::size_t v = 0; v < 24; ++v) CHECK(x[v] == static_cast<float>(value(i, v)));
  }
  const auto vectors = hpf::data::load_hdf5_dataset(file, "/train/x2", "train/y", 5, {0, 4});
  CHECK(vectors.shape_text() == "24x1x1");
  CHECK(vectors.local_size() == 3);  // samples 0, 4, 8
  CHECK(vectors.label(8) == 1);
  CHECK(gathered(vectors, 8)[23] == static_cast<float>(value(8, 23)));
  CHECK(hpf::data::load_hdf5_dataset(file, "x3", "y", 5).shape_text() == "1x6x4");
  write_hdf5<Elem>(file, "volumes", {10, 2, 3, 2, 2}, values(10, 24));
  const auto volumes = hpf::data::load_hdf5_dataset(file, "volumes", "y", 5, {1, 2});
  CHECK(volumes.shape_text() == "2x3x2x2");
  CHECK(volumes.dims() == hpf::data::SampleDims{.channels = 2, .height = 2, .width = 2, .depth = 3});
  const auto v9 = gathered(volumes, 9);  // [C][1][D*H*W]: file order
  for (std::size_t v = 0; v < 24; ++v) CHECK(v9[v] == static_cast<float>(value(9, v)));
  CHECK(hpf::data::load_hdf5_dataset(file, "x3", "y", 5, {3, 4}).local_size() == 2);  // 3, 7
}

TEST_CASE("load_hdf5_dataset: big-endian, chunked and compressed datasets, a user block") {
  hpf_test::TempDir dir;
  const auto file = dir / "layouts.h5";
  write_hdf5<double>(file, "x", {37, 3, 5}, values(37, 15), Hdf5Layout{.file_type = H5T_IEEE_F64BE, .user_block = 512});
  write_hdf5<float>(file, "chunked", {37, 15}, values(37, 15), Hdf5Layout{.chunk_rows = 4});
  std::vector<int> labels(37);
  for (std::size_t i = 0; i < 37; ++i) labels[i] = static_cast<int>(i % 7);
  write_hdf5<std::int32_t>(file, "y", {37}, labels, Hdf5Layout{.file_type = H5T_STD_I32BE, .chunk_rows = 5});
  for (const char* inputs : {"x", "chunked"}) {
    INFO("inputs ", inputs);
    const auto d = hpf::data::load_hdf5_dataset(file, inputs, "y", 7, {2, 4});
    CHECK(d.local_size() == 9);  // 2, 6, ..., 34
    for (std::size_t i = 2; i < 37; i += 4) {
      CHECK(d.label(i) == static_cast<std::int32_t>(i % 7));
      const auto x = gathered(d, i);
      CHECK(x.front() == static_cast<float>(value(i, 0)));
      CHECK(x.back() == static_cast<float>(value(i, 14)));
    }
  }
}

TEST_CASE("load_hdf5_dataset: a pipeline stage's shard reads only the dataset it keeps") {
  hpf_test::TempDir dir;
  const auto file = dir / "stages.h5";
  // Data in an external file that does not exist: its header reads, its data does not.
  write_hdf5<float>(file, "x", {6, 4}, values(6, 4));
  write_hdf5<float>(file, "x_gone", {6, 4}, std::vector<float>{}, Hdf5Layout{.external = "absent.bin"});
  write_hdf5<std::int64_t>(file, "y", {6}, std::vector<int>{0, 1, 2, 0, 1, 2});
  write_hdf5<std::int64_t>(file, "y_gone", {6}, std::vector<int>{}, Hdf5Layout{.external = "absent.bin"});
  const auto first = hpf::data::load_hdf5_dataset(file, "x", "y_gone", 3, hpf::data::pipeline_shard(0, 2, 0, 2));
  CHECK(first.has_images());
  CHECK_FALSE(first.has_labels());
  CHECK(first.memory_bytes() == 3 * 4 * sizeof(float));
  const auto last = hpf::data::load_hdf5_dataset(file, "x_gone", "y", 3, hpf::data::pipeline_shard(1, 2, 1, 2));
  CHECK(last.memory_bytes() == 3 * sizeof(std::int32_t));
  CHECK(last.label(5) == 2);
  const auto middle = hpf::data::load_hdf5_dataset(file, "x_gone", "y_gone", 3, hpf::data::pipeline_shard(0, 1, 1, 3));
  CHECK(middle.memory_bytes() == 0);
  CHECK(middle.size() == 6);
  // The shard that keeps it does read it.
  CHECK(contains(hpf_test::message_of<DataError>([&] { hpf::data::load_hdf5_dataset(file, "x", "y_gone", 3); }),
                 "reading dataset 'y_gone' failed: HDF5: "));
}

TEST_CASE("load_hdf5_regression: targets (n,) and (n, k) of any number type, as float") {
  hpf_test::TempDir dir;
  const auto file = dir / "regression.h5";
  write_hdf5<float>(file, "x", {10, 3}, values(10, 3));
  write_hdf5<double>(file, "t2", {10, 2}, values(10, 2));
  write_hdf5<std::int16_t>(file, "t1", {10}, values(10, 1));
  const auto r = hpf::data::load_hdf5_regression(file, "x", "t2", {0, 2});
  CHECK(r.is_regression());
  CHECK(r.target_size() == 2);
  CHECK(r.local_size() == 5);
  const std::size_t four[] = {4};
  float t[2];
  r.gather_targets(std::span<const std::size_t>(four), t);
  CHECK(t[0] == static_cast<float>(value(4, 0)));
  CHECK(t[1] == static_cast<float>(value(4, 1)));
  const auto one = hpf::data::load_hdf5_regression(file, "x", "t1", {1, 2});
  CHECK(one.target_size() == 1);
  const std::size_t nine[] = {9};
  one.gather_targets(std::span<const std::size_t>(nine), t);
  CHECK(t[0] == 90.0f);
  const auto last_stage = hpf::data::load_hdf5_regression(file, "x", "t2", hpf::data::pipeline_shard(0, 1, 1, 2));
  CHECK(last_stage.memory_bytes() == 10 * 2 * sizeof(float));
}

TEST_CASE("load_hdf5_dataset: every problem is a DataError naming the file and what is wrong") {
  hpf_test::TempDir dir;
  const auto file = dir / "bad.h5";
  write_hdf5<float>(file, "x", {10, 2, 3, 4}, values(10, 24));
  write_hdf5<float>(file, "group/x2", {10, 24}, values(10, 24));
  write_hdf5<std::int64_t>(file, "y", {10}, std::vector<int>{0, 1, 2, 3, 4, 0, 1, 2, 3, 4});
  const std::string path = std::filesystem::absolute(file).lexically_normal().string();
  const auto error = [&](auto load) {
    const std::string message = hpf_test::message_of<DataError>(load);
    CHECK_MESSAGE(contains(message, "hpf::data: "), message);
    return message;
  };
  const auto load = [&](const std::filesystem::path& f, const std::string& x, const std::string& y,
                        std::size_t classes = 5, hpf::data::Shard shard = {}) {
    return error([&] { hpf::data::load_hdf5_dataset(f, x, y, classes, shard); });
  };

  SUBCASE("a missing file, a directory, a file that is not HDF5, a damaged one") {
    CHECK(contains(load(dir / "absent.h5", "x", "y"),
                   (dir / "absent.h5").string() + ": cannot open: No such file or directory"));
    CHECK(contains(load(dir.path(), "x", "y"), "not a regular file (an HDF5 file is expected)"));
    hpf_test::write_raw(dir / "text.h5", {'h', 'e', 'l', 'l', 'o'});
    CHECK(contains(load(dir / "text.h5", "x", "y"), "text.h5: not an HDF5 file (no HDF5 signature"));
    hpf_test::write_raw(dir / "npy.h5", std::vector<std::uint8_t>(2048, 0x93));
    CHECK(contains(load(dir / "npy.h5", "x", "y"), "not an HDF5 file"));
    auto bytes = hpf_test::read_raw(file);
    bytes.resize(800);  // the signature, then less than the file's objects
    hpf_test::write_raw(dir / "cut.h5", bytes);
    CHECK(contains(load(dir / "cut.h5", "x", "y"), "cut.h5: cannot open as HDF5: HDF5: "));
  }
  SUBCASE("a missing dataset, named with the datasets the file has") {
    CHECK(contains(load(file, "x", "labels"),
                   path + ": no dataset 'labels' (the file's datasets: 'group/x2', 'x', 'y')"));
    CHECK(contains(load(file, "nothere/x", "y"), "no dataset 'nothere/x' (the file's datasets: "));
    CHECK(contains(load(file, "group", "y"), "'group' is a group, not a dataset (the file's datasets: 'group/x2'"));
    CHECK(contains(load(file, "/", "y"), "no dataset '/'"));
    hpf_test::write_hdf5_object(dir / "empty.h5", "g", "group");
    CHECK(contains(load(dir / "empty.h5", "x", "y"), "no dataset 'x' (the file holds no datasets)"));
    for (int k = 100; k < 125; ++k) {
      // Not "d" + std::to_string(k): at -O3 GCC 12 warns of overlapping copies in it (-Wrestrict).
      const std::string name = std::string("d").append(std::to_string(k));
      write_hdf5<float>(dir / "many.h5", name, {1, 1}, values(1, 1));
    }
    CHECK(contains(load(dir / "many.h5", "x", "y"), "'d119' and 5 more)"));
  }
  SUBCASE("labels that are not integers, or of another shape") {
    write_hdf5<float>(file, "fy", {10}, std::vector<float>(10, 1));
    CHECK(contains(load(file, "x", "fy"), path + ": dataset 'fy': class labels must be integers, found float32 (for "
                                                 "real-valued targets use hpf::data::load_hdf5_regression)"));
    hpf_test::write_hdf5_object(file, "by", "enum", 10);
    CHECK(contains(load(file, "x", "by"), "dataset 'by': class labels must be integers, found enum"));
    write_hdf5<std::int32_t>(file, "y52", {5, 2}, std::vector<int>(10, 1));
    CHECK(contains(load(file, "x", "y52"), "dataset 'y52': expected n labels, shape (n,) or (n, 1), found (5, 2)"));
    hpf_test::write_hdf5_object(file, "y0", "scalar");
    CHECK(contains(load(file, "x", "y0"), "dataset 'y0' is a scalar; expected labels per sample"));
  }
  SUBCASE("inputs of another rank, type or size") {
    CHECK(contains(load(file, "y", "y"), path + ": dataset 'y': expected inputs of shape (n, features), (n, height, "
                                                "width) or (n, channels, height, width), found (10,)"));
    write_hdf5<float>(file, "x6", {10, 1, 1, 2, 3, 4}, values(10, 24));
    CHECK(contains(load(file, "x6", "y"),
                   "found (10, 1, 1, 2, 3, 4); volumes are (n, channels, depth, height, width)"));
    write_hdf5<float>(file, "x0", {0, 3}, std::vector<float>{});
    CHECK(contains(load(file, "x0", "y"), "dataset 'x0' holds no samples (shape (0, 3))"));
    write_hdf5<float>(file, "x40", {4, 0}, std::vector<float>{});
    CHECK(contains(load(file, "x40", "y"), "dataset 'x40': dimension 1 of shape (4, 0) is zero"));
    hpf_test::write_hdf5_object(file, "xs", "string");
    CHECK(contains(load(file, "xs", "y"), "dataset 'xs' holds string values; hpf reads integer and float datasets"));
    hpf_test::write_hdf5_object(file, "xb", "enum");
    CHECK(contains(load(file, "xb", "y"), "(h5py writes bool as an enum: save it as uint8)"));
    hpf_test::write_hdf5_object(file, "xn", "null");
    CHECK(contains(load(file, "xn", "y"), "dataset 'xn' holds no data (an empty dataspace)"));
  }
  SUBCASE("inputs and labels disagreeing on the sample count") {
    write_hdf5<std::int64_t>(file, "y9", {9}, std::vector<int>(9, 1));
    CHECK(contains(load(file, "x", "y9"), path + ": input/labels count mismatch: dataset 'x' holds 10 samples but "
                                                 "dataset 'y9' holds 9 labels"));
    write_hdf5<float>(file, "t9", {9, 2}, std::vector<float>(18, 1));
    CHECK(contains(error([&] { hpf::data::load_hdf5_regression(file, "x", "t9"); }),
                   "input/targets count mismatch: dataset 'x' holds 10 samples but dataset 't9' holds 9 targets"));
  }
  SUBCASE("a label out of range, on the shard that holds it") {
    std::vector<std::int64_t> labels{0, 1, 2, 3, 5, 0, 1, 2, 3, 4};
    write_hdf5<std::int16_t>(file, "bad", {10}, labels);
    CHECK(contains(load(file, "x", "bad", 5, {1, 3}),
                   path + ": dataset 'bad': label 5 of sample 4 is out of range [0, 5)"));
    CHECK_NOTHROW(hpf::data::load_hdf5_dataset(file, "x", "bad", 5, {0, 3}));
    labels[4] = -1;
    write_hdf5<std::int8_t>(file, "neg", {10}, labels);
    CHECK(contains(load(file, "x", "neg"), "label -1 of sample 4 is out of range [0, 5)"));
    labels[4] = 0;
    labels[9] = (std::int64_t{1} << 32) + 1;  // 1 if narrowed first
    write_hdf5<std::int64_t>(file, "wide", {10}, labels);
    CHECK(contains(load(file, "x", "wide"), "label 4294967297 of sample 9 is out of range [0, 5)"));
    std::vector<std::uint64_t> huge(10, 0);
    huge[7] = std::numeric_limits<std::uint64_t>::max();
    write_hdf5<std::uint64_t>(file, "huge", {10}, huge);
    CHECK(contains(load(file, "x", "huge"), "label 9223372036854775807 of sample 7 is out of range [0, 5)"));
  }
  SUBCASE("regression targets that are no numbers or give no values") {
    write_hdf5<float>(file, "t0", {10, 0}, std::vector<float>{});
    CHECK(contains(error([&] { hpf::data::load_hdf5_regression(file, "x", "t0"); }),
                   path + ": dataset 't0': shape (10, 0) gives each sample no target values"));
    hpf_test::write_hdf5_object(file, "ts", "string", 10);
    CHECK(contains(error([&] { hpf::data::load_hdf5_regression(file, "x", "ts"); }),
                   "dataset 'ts' holds string values; hpf reads integer and float targets"));
  }
  SUBCASE("a shard index out of range") {
    CHECK_THROWS_AS(hpf::data::load_hdf5_dataset(file, "x", "y", 5, {3, 3}), std::invalid_argument);
    CHECK_THROWS_AS(hpf::data::load_hdf5_regression(file, "x", "y", {1, 0}), std::invalid_argument);
  }
}

TEST_CASE("load_hdf5_dataset: HDF5's error stack stays off stderr; the caller's handler is kept") {
  hpf_test::TempDir dir;
  const auto file = dir / "quiet.h5";
  write_hdf5<float>(file, "x", {4, 2}, values(4, 2));
  write_hdf5<std::int32_t>(file, "y", {4}, std::vector<int>{0, 1, 0, 1});
  auto bytes = hpf_test::read_raw(file);
  bytes.resize(800);
  hpf_test::write_raw(dir / "cut.h5", bytes);
  H5E_auto2_t before = nullptr;
  void* before_data = nullptr;
  H5Eget_auto2(H5E_DEFAULT, &before, &before_data);
  REQUIRE((before != nullptr));  // HDF5's default: print the stack
  const std::string printed = stderr_of([&] {
    CHECK_THROWS_AS(hpf::data::load_hdf5_dataset(dir / "cut.h5", "x", "y", 2), DataError);
    CHECK_THROWS_AS(hpf::data::load_hdf5_dataset(file, "x", "absent/y", 2), DataError);
    CHECK_THROWS_AS(hpf::data::load_hdf5_dataset(file, "x", "y", 1), DataError);
    CHECK(hpf::data::load_hdf5_dataset(file, "x", "y", 2).size() == 4);
  });
  CHECK_MESSAGE(printed.empty(), printed);
  H5E_auto2_t after = nullptr;
  void* after_data = nullptr;
  H5Eget_auto2(H5E_DEFAULT, &after, &after_data);
  CHECK((after == before));  // (a function pointer doctest cannot print)
  CHECK((after_data == before_data));
}

TEST_CASE("hdf5_file_access: the default driver before MPI_Init") {
  const auto fapl = hpf::data::detail::hdf5_file_access();
  CHECK(H5Pget_driver(fapl.get()) == H5FD_SEC2);
}
