#include <hpf/data/dataset.hpp>

#include <doctest/doctest.h>

#include <cstdint>
#include <vector>

using hpf::data::Dataset;
using hpf::data::SampleDims;
using hpf::data::Shard;

namespace {

constexpr SampleDims dims{2, 2, 3};  // C=2, H*W=6

// Byte value of global sample i at channel c, position s (distinct for every triple used here).
std::uint8_t pixel(std::size_t i, std::size_t c, std::size_t s) { return static_cast<std::uint8_t>(i * 20 + c * 10 + s); }

// The storage of shard `shard` of a `size`-sample dataset made of pixel().
std::vector<std::uint8_t> shard_pixels(std::size_t size, const Shard& shard) {
  std::vector<std::uint8_t> bytes;
  for (std::size_t i = shard.index; i < size; i += shard.count) {
    for (std::size_t c = 0; c < dims.channels; ++c) {
      for (std::size_t s = 0; s < dims.spatial(); ++s) bytes.push_back(pixel(i, c, s));
    }
  }
  return bytes;
}

std::vector<std::int32_t> shard_labels(std::size_t size, const Shard& shard) {
  std::vector<std::int32_t> labels;
  for (std::size_t i = shard.index; i < size; i += shard.count) labels.push_back(static_cast<std::int32_t>(i % 3));
  return labels;
}

Dataset make(std::size_t size, Shard shard) {
  return Dataset::from_pixels(size, dims, 3, shard, shard.images ? shard_pixels(size, shard) : std::vector<std::uint8_t>{},
                              shard.labels ? shard_labels(size, shard) : std::vector<std::int32_t>{});
}

// Checks that out holds samples `indices` in [C][n][H*W] layout, as pixel / 255 in T.
template <class T>
void check_layout(const std::vector<std::size_t>& indices, const std::vector<T>& out) {
  const std::size_t n = indices.size();
  for (std::size_t c = 0; c < dims.channels; ++c) {
    for (std::size_t j = 0; j < n; ++j) {
      for (std::size_t s = 0; s < dims.spatial(); ++s) {
        CHECK(out[(c * n + j) * dims.spatial() + s] == static_cast<T>(pixel(indices[j], c, s)) / T(255));
      }
    }
  }
}

}  // namespace

TEST_CASE("Dataset: sizes and metadata") {
  const Dataset d = make(7, {});
  CHECK(d.size() == 7);
  CHECK(d.local_size() == 7);
  CHECK(d.dims() == dims);
  CHECK(d.sample_size() == 12);
  CHECK(d.channels() == 2);
  CHECK(d.shape_text() == "2x2x3");
  CHECK(d.classes() == 3);
  CHECK((d.has_images() && d.has_labels()));
  CHECK(d.memory_bytes() == 7 * 12 + 7 * 4);
  CHECK(d.holds(6));
  CHECK_FALSE(d.holds(7));
}

TEST_CASE_TEMPLATE("Dataset::gather writes [C][n][H*W], scaled x/255", T, float, double) {
  const Dataset d = make(7, {});
  const std::vector<std::size_t> indices{5, 0, 3, 5};
  std::vector<T> out(indices.size() * d.sample_size(), T(-1));
  d.gather<T>(indices, out.data());
  check_layout(indices, out);
  std::vector<std::int32_t> labels(indices.size());
  d.gather_labels(indices, labels.data());
  CHECK(labels == std::vector<std::int32_t>{2, 0, 0, 2});
  CHECK(d.label(4) == 1);
}

TEST_CASE("Dataset: x/255 is bit-identical to dividing in float") {
  std::vector<std::uint8_t> all(256);
  for (std::size_t b = 0; b < 256; ++b) all[b] = static_cast<std::uint8_t>(b);
  const Dataset d = Dataset::from_pixels(1, {1, 16, 16}, 1, {}, all, {0});
  std::vector<float> out(256);
  const std::size_t index = 0;
  d.gather<float>({&index, 1}, out.data());
  for (std::size_t b = 0; b < 256; ++b) CHECK(out[b] == static_cast<float>(b) / 255.0f);
  CHECK(out[255] == 1.0f);
}

TEST_CASE("Dataset: float values") {
  const std::vector<float> values{0.5f, -1.0f, 2.0f, 3.0f, 4.0f, 5.0f};
  const Dataset d = Dataset::from_values(3, {2, 1, 1}, 4, {}, values, {3, 0, 1});
  std::vector<double> out(4);
  const std::vector<std::size_t> indices{2, 0};
  d.gather<double>(indices, out.data());
  CHECK(out == std::vector<double>{4.0, 0.5, 5.0, -1.0});  // channel 0 of samples 2, 0; then channel 1
  CHECK(d.memory_bytes() == 6 * 4 + 3 * 4);
}

TEST_CASE("Dataset: a shard holds only its samples") {
  const Shard shard{1, 3};
  const Dataset d = make(8, shard);  // holds 1, 4, 7
  CHECK(d.size() == 8);
  CHECK(d.local_size() == 3);
  CHECK(d.memory_bytes() == 3 * 12 + 3 * 4);
  CHECK((d.holds(1) && d.holds(4) && d.holds(7)));
  CHECK_FALSE(d.holds(0));
  CHECK_FALSE(d.holds(10));
  const std::vector<std::size_t> indices{7, 1};
  std::vector<float> out(2 * d.sample_size());
  d.gather<float>(indices, out.data());
  check_layout(indices, out);
  CHECK(d.label(7) == 1);

  const std::vector<std::size_t> foreign{4, 3};
  CHECK_THROWS_WITH_AS(d.gather<float>(foreign, out.data()),
                       "hpf::data::Dataset::gather: sample 3 is not in this shard (shard 1 of 3 holds i % 3 == 1)",
                       std::out_of_range);
  CHECK_THROWS_WITH_AS(d.label(0),
                       "hpf::data::Dataset::label: sample 0 is not in this shard (shard 1 of 3 holds i % 3 == 1)",
                       std::out_of_range);
  std::int32_t label = 0;
  const std::size_t beyond = 10;
  CHECK_THROWS_WITH_AS(d.gather_labels({&beyond, 1}, &label),
                       "hpf::data::Dataset::gather_labels: sample 10 is out of range (the dataset has 8 samples)",
                       std::out_of_range);
}

TEST_CASE("Dataset: pipeline stages keep only what they read") {
  const std::size_t index = 0;
  std::vector<float> out(12);
  std::int32_t label = 0;
  const Dataset middle = make(8, hpf::data::pipeline_shard(0, 2, 1, 3));
  CHECK(middle.size() == 8);
  CHECK(middle.local_size() == 4);
  CHECK(middle.memory_bytes() == 0);
  CHECK_THROWS_AS(middle.gather<float>({&index, 1}, out.data()), std::logic_error);
  CHECK_THROWS_AS(middle.label(0), std::logic_error);

  const Dataset first = make(8, hpf::data::pipeline_shard(0, 2, 0, 3));
  CHECK(first.memory_bytes() == 4 * 12);
  CHECK_NOTHROW(first.gather<float>({&index, 1}, out.data()));
  CHECK_THROWS_WITH_AS(first.gather_labels({&index, 1}, &label),
                       "hpf::data::Dataset::gather_labels: this process's shard holds no labels (it serves a "
                       "pipeline stage other than the last)",
                       std::logic_error);

  const Dataset last = make(8, hpf::data::pipeline_shard(0, 2, 2, 3));
  CHECK(last.memory_bytes() == 4 * 4);
  CHECK(last.label(6) == 0);
  CHECK_THROWS_WITH_AS(last.gather<float>({&index, 1}, out.data()),
                       "hpf::data::Dataset::gather: this process's shard holds no images (it serves a pipeline "
                       "stage other than the first)",
                       std::logic_error);
}

TEST_CASE("Dataset: inconsistent construction is rejected") {
  const Shard half{0, 2};
  CHECK_THROWS_WITH_AS(Dataset::from_pixels(4, dims, 3, half, shard_pixels(4, {}), shard_labels(4, half)),
                       "hpf::data::Dataset: shard needs 24 sample values, got 48", std::invalid_argument);
  CHECK_THROWS_WITH_AS(Dataset::from_pixels(4, dims, 3, half, shard_pixels(4, half), {0}),
                       "hpf::data::Dataset: shard needs 2 labels, got 1", std::invalid_argument);
  CHECK_THROWS_WITH_AS(Dataset::from_values(3, {1, 1, 1}, 2, {1, 2}, {1.0f}, {2}),
                       "hpf::data::Dataset: label 2 of sample 1 is out of range [0, 2)", std::invalid_argument);
  CHECK_THROWS_AS(Dataset::from_values(3, {1, 1, 1}, 2, {2, 2}, {}, {}), std::invalid_argument);
  CHECK_THROWS_AS(Dataset::from_values(3, {0, 1, 1}, 2, {}, {}, {0, 0, 0}), std::invalid_argument);
  CHECK_THROWS_AS(Dataset::from_pixels(1, {1, 1, 1}, 2, {}, {1}, {0}, 0.0), std::invalid_argument);
}
