#include <hpf/data/synthetic.hpp>

#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <numeric>
#include <vector>

using hpf::data::synthetic_dataset;

namespace {

std::vector<std::size_t> range(std::size_t begin, std::size_t end, std::size_t step = 1) {
  std::vector<std::size_t> indices;
  for (std::size_t i = begin; i < end; i += step) indices.push_back(i);
  return indices;
}

std::vector<float> samples(const hpf::data::Dataset& d, const std::vector<std::size_t>& indices) {
  std::vector<float> out(indices.size() * d.sample_size());
  d.gather<float>(indices, out.data());
  return out;
}

std::vector<std::int32_t> labels(const hpf::data::Dataset& d, const std::vector<std::size_t>& indices) {
  std::vector<std::int32_t> out(indices.size());
  d.gather_labels(indices, out.data());
  return out;
}

}  // namespace

TEST_CASE("synthetic_dataset: shape, determinism and seeds") {
  const auto d = synthetic_dataset(50, 3, 4, 5, 7, 42);
  CHECK(d.size() == 50);
  CHECK(d.dims() == hpf::data::SampleDims{3, 4, 5});
  CHECK(d.classes() == 7);
  const auto all = range(0, 50);
  const auto again = synthetic_dataset(50, 3, 4, 5, 7, 42);
  CHECK(samples(d, all) == samples(again, all));
  CHECK(labels(d, all) == labels(again, all));
  const auto other = synthetic_dataset(50, 3, 4, 5, 7, 43);
  CHECK(samples(d, all) != samples(other, all));
  CHECK(labels(d, all) != labels(other, all));
  // Sample i does not depend on how many samples there are.
  const auto fewer = synthetic_dataset(10, 3, 4, 5, 7, 42);
  CHECK(samples(fewer, range(0, 10)) == samples(d, range(0, 10)));
}

TEST_CASE("synthetic_dataset: a sample's content does not depend on its shard") {
  const auto whole = synthetic_dataset(31, 2, 3, 3, 5, 9);
  for (std::size_t r = 0; r < 4; ++r) {
    const auto shard = synthetic_dataset(31, 2, 3, 3, 5, 9, {r, 4});
    CHECK(shard.local_size() == (31 - r + 3) / 4);
    const auto mine = range(r, 31, 4);
    CHECK(samples(shard, mine) == samples(whole, mine));
    CHECK(labels(shard, mine) == labels(whole, mine));
  }
  const auto middle = synthetic_dataset(31, 2, 3, 3, 5, 9, hpf::data::pipeline_shard(1, 2, 1, 3));
  CHECK(middle.memory_bytes() == 0);
  const auto last = synthetic_dataset(31, 2, 3, 3, 5, 9, hpf::data::pipeline_shard(1, 2, 2, 3));
  CHECK(labels(last, range(1, 31, 2)) == labels(whole, range(1, 31, 2)));
  CHECK(last.memory_bytes() == 15 * sizeof(std::int32_t));
}

TEST_CASE("synthetic_dataset: N(0, 1) values and uniform labels") {
  const auto d = synthetic_dataset(4000, 1, 5, 5, 10, 1);
  const auto all = range(0, 4000);
  const auto x = samples(d, all);
  const double mean = std::accumulate(x.begin(), x.end(), 0.0) / static_cast<double>(x.size());
  double var = 0;
  for (float v : x) var += (v - mean) * (v - mean);
  var /= static_cast<double>(x.size());
  CHECK(std::abs(mean) < 0.01);
  CHECK(std::abs(var - 1.0) < 0.02);
  std::vector<std::size_t> counts(10);
  for (std::int32_t y : labels(d, all)) counts.at(static_cast<std::size_t>(y)) += 1;
  for (std::size_t c : counts) CHECK((c > 330 && c < 470));
}
