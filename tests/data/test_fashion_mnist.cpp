#include <hpf/data/fashion_mnist.hpp>
#include <hpf/data/idx.hpp>

#include <data/idx_files.hpp>
#include <support/scoped_env.hpp>

#include <doctest/doctest.h>

#include <algorithm>
#include <array>
#include <numeric>
#include <string>
#include <vector>

using hpf::data::DataError;
using hpf::data::Shard;
using hpf_test::contains;
using hpf_test::idx_bytes;

namespace {

const std::filesystem::path debian_directory = "/usr/share/datasets/fashion-mnist";

// Writes a tiny Fashion-MNIST look-alike: n 3x2 images (pixel = sample index) and labels i % 10.
void write_tiny(const std::filesystem::path& images, const std::filesystem::path& labels, std::uint32_t n) {
  std::vector<std::uint8_t> pixels, label_bytes;
  for (std::uint32_t i = 0; i < n; ++i) {
    pixels.insert(pixels.end(), 6, static_cast<std::uint8_t>(i));
    label_bytes.push_back(static_cast<std::uint8_t>(i % 10));
  }
  hpf_test::write_gz(images, idx_bytes({n, 3, 2}, pixels));
  hpf_test::write_gz(labels, idx_bytes({n}, label_bytes));
}

void write_tiny_fashion_mnist(const hpf_test::TempDir& dir) {
  write_tiny(dir / "train-images-idx3-ubyte.gz", dir / "train-labels-idx1-ubyte.gz", 12);
  write_tiny(dir / "t10k-images-idx3-ubyte.gz", dir / "t10k-labels-idx1-ubyte.gz", 5);
}

std::string full(const std::filesystem::path& file) { return std::filesystem::absolute(file).string(); }

}  // namespace

TEST_CASE("load_idx_dataset: images and labels, whole and sharded") {
  hpf_test::TempDir dir;
  write_tiny(dir / "img.gz", dir / "lab.gz", 12);
  const auto d = hpf::data::load_idx_dataset(dir / "img.gz", dir / "lab.gz", 10);
  CHECK(d.size() == 12);
  CHECK(d.dims() == hpf::data::SampleDims{1, 3, 2});
  CHECK(d.label(11) == 1);
  std::vector<float> out(6);
  const std::size_t index = 11;
  d.gather<float>({&index, 1}, out.data());
  CHECK(out == std::vector<float>(6, 11.0f / 255.0f));

  const auto s = hpf::data::load_idx_dataset(dir / "img.gz", dir / "lab.gz", 10, {2, 5});
  CHECK(s.local_size() == 2);  // 2, 7
  CHECK(s.memory_bytes() * 4 < d.memory_bytes() * 2);
  CHECK(s.label(7) == 7);
  const std::size_t seven = 7;
  s.gather<float>({&seven, 1}, out.data());
  CHECK(out == std::vector<float>(6, 7.0f / 255.0f));

  SUBCASE("channels come from a rank-4 image file") {
    hpf_test::write_raw(dir / "c.idx", idx_bytes({2, 3, 1, 2}, hpf_test::pattern(12)));
    hpf_test::write_raw(dir / "cl.idx", idx_bytes({2}, {0, 1}));
    CHECK(hpf::data::load_idx_dataset(dir / "c.idx", dir / "cl.idx", 2).dims() == hpf::data::SampleDims{3, 1, 2});
  }
}

TEST_CASE("load_idx_dataset: inconsistent files") {
  hpf_test::TempDir dir;
  SUBCASE("image/label count mismatch names both files and counts") {
    write_tiny(dir / "img.gz", dir / "unused.gz", 12);
    write_tiny(dir / "unused2.gz", dir / "lab.gz", 11);
    const std::string expected = "hpf::data: image/label count mismatch: " + full(dir / "img.gz") +
                                 " holds 12 images but " + full(dir / "lab.gz") + " holds 11 labels";
    for (const Shard shard : {Shard{}, hpf::data::pipeline_shard(0, 1, 1, 3)}) {
      CHECK_THROWS_WITH_AS(hpf::data::load_idx_dataset(dir / "img.gz", dir / "lab.gz", 10, shard), expected.c_str(),
                           DataError);
    }
  }
  SUBCASE("label out of range names the labels file and the sample") {
    write_tiny(dir / "img.gz", dir / "unused.gz", 4);
    hpf_test::write_gz(dir / "lab.gz", idx_bytes({4}, {0, 1, 2, 12}));
    const std::string expected =
        "hpf::data: " + full(dir / "lab.gz") + ": label 12 of sample 3 is out of range [0, 10)";
    CHECK_THROWS_WITH_AS(hpf::data::load_idx_dataset(dir / "img.gz", dir / "lab.gz", 10), expected.c_str(), DataError);
    // A shard validates the labels it keeps, naming the global sample.
    CHECK_THROWS_WITH_AS(hpf::data::load_idx_dataset(dir / "img.gz", dir / "lab.gz", 10, {1, 2}), expected.c_str(),
                         DataError);
    CHECK_NOTHROW(hpf::data::load_idx_dataset(dir / "img.gz", dir / "lab.gz", 10, {0, 2}));
  }
  SUBCASE("wrong ranks") {
    write_tiny(dir / "img.gz", dir / "lab.gz", 4);
    const auto message = hpf_test::message_of<DataError>(
        [&] { hpf::data::load_idx_dataset(dir / "lab.gz", dir / "lab.gz", 10); });
    CHECK(contains(message, full(dir / "lab.gz") + ": expected images of n x height x width"));
    CHECK(contains(message, "found 4"));
    CHECK(contains(hpf_test::message_of<DataError>([&] { hpf::data::load_idx_dataset(dir / "img.gz", dir / "img.gz", 10); }),
                   full(dir / "img.gz") + ": expected n labels (rank 1), found 4 x 3 x 2"));
  }
}

TEST_CASE("load_fashion_mnist: directory from HPF_FASHION_MNIST_DIR") {
  hpf_test::TempDir dir;
  write_tiny_fashion_mnist(dir);
  {
    const hpf_test::ScopedEnv env("HPF_FASHION_MNIST_DIR", dir.path().c_str());
    CHECK(hpf::data::fashion_mnist_directory() == dir.path());
    const auto [train, test] = hpf::data::load_fashion_mnist();
    CHECK(train.size() == 12);
    CHECK(test.size() == 5);
    CHECK(train.classes() == 10);
    const auto sharded = hpf::data::load_fashion_mnist({1, 4});
    CHECK(sharded.train.local_size() == 3);
    CHECK(sharded.test.local_size() == 1);
    CHECK(sharded.test.holds(1));
  }
  {
    const hpf_test::ScopedEnv env("HPF_FASHION_MNIST_DIR", nullptr);
    CHECK(hpf::data::fashion_mnist_directory() == debian_directory);
  }
}

TEST_CASE("load_fashion_mnist: a missing file says which, and where to get it") {
  hpf_test::TempDir dir;
  write_tiny_fashion_mnist(dir);
  std::filesystem::remove(dir / "t10k-labels-idx1-ubyte.gz");
  const auto message = hpf_test::message_of<DataError>([&] { hpf::data::load_fashion_mnist({}, dir.path()); });
  CHECK(contains(message, full(dir / "t10k-labels-idx1-ubyte.gz") + ": cannot open: No such file or directory"));
  CHECK(contains(message, "dataset-fashion-mnist"));
  CHECK(contains(message, "HPF_FASHION_MNIST_DIR"));
}

TEST_CASE("load_fashion_mnist: the Debian files") {
  REQUIRE_MESSAGE(std::filesystem::exists(debian_directory / "train-images-idx3-ubyte.gz"),
                  "install the Debian package dataset-fashion-mnist");
  const auto [train, test] = hpf::data::load_fashion_mnist({}, debian_directory);
  CHECK(train.size() == 60000);
  CHECK(test.size() == 10000);
  CHECK(train.dims() == hpf::data::SampleDims{1, 28, 28});
  CHECK(test.dims() == hpf::data::SampleDims{1, 28, 28});
  CHECK(train.classes() == 10);

  // Balanced classes: 6000 / 1000 per class.
  for (const auto* d : {&train, &test}) {
    std::vector<std::size_t> all(d->size());
    std::iota(all.begin(), all.end(), std::size_t{0});
    std::vector<std::int32_t> labels(all.size());
    d->gather_labels(all, labels.data());
    for (std::int32_t c = 0; c < 10; ++c) CHECK(std::count(labels.begin(), labels.end(), c) == d->size() / 10);
  }
  CHECK(train.label(0) == 9);  // the first training image is an ankle boot

  // Pixels are byte / 255, in [0, 1], reaching both ends.
  const auto raw = hpf::data::read_idx(debian_directory / "t10k-images-idx3-ubyte.gz");
  std::vector<std::size_t> first(100);
  std::iota(first.begin(), first.end(), std::size_t{0});
  std::vector<float> pixels(100 * 784);
  test.gather<float>(first, pixels.data());
  CHECK(std::equal(pixels.begin(), pixels.end(), raw.bytes.begin(),
                   [](float x, std::uint8_t b) { return x == static_cast<float>(b) / 255.0f; }));
  CHECK(*std::min_element(pixels.begin(), pixels.end()) == 0.0f);
  CHECK(*std::max_element(pixels.begin(), pixels.end()) == 1.0f);

  {  // a shard keeps its samples and a third of the bytes
    const auto shard = hpf::data::load_fashion_mnist({2, 3}, debian_directory);
    CHECK(shard.train.size() == 60000);
    CHECK(shard.train.local_size() == 20000);
    CHECK(shard.train.memory_bytes() == train.memory_bytes() / 3);
    CHECK(shard.test.local_size() == 3333);
    CHECK_FALSE(shard.test.holds(0));
    const std::vector<std::size_t> picks{59999, 2, 30002};
    std::vector<float> a(3 * 784), b(3 * 784);
    shard.train.gather<float>(picks, a.data());
    train.gather<float>(picks, b.data());
    CHECK(a == b);
    for (std::size_t i : picks) CHECK(shard.train.label(i) == train.label(i));
  }
  {  // a middle pipeline stage keeps nothing; the last only labels
    const auto middle = hpf::data::load_fashion_mnist(hpf::data::pipeline_shard(0, 2, 1, 3), debian_directory);
    CHECK(middle.train.size() == 60000);
    CHECK(middle.train.memory_bytes() == 0);
    const auto last = hpf::data::load_fashion_mnist(hpf::data::pipeline_shard(1, 2, 2, 3), debian_directory);
    CHECK(last.test.memory_bytes() == 5000 * 4);
    CHECK(last.test.label(9999) == test.label(9999));
  }
}
