// SPDX-License-Identifier: MIT
#ifndef HPF_DATA_SYNTHETIC_HPP
#define HPF_DATA_SYNTHETIC_HPP

#include <hpf/data/dataset.hpp>
#include <hpf/data/shard.hpp>
#include <hpf/meta/hash.hpp>
#include <hpf/tensor/random.hpp>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace hpf::data {

/// \brief A synthetic dataset for benchmarks: `count` samples of shape `dims` (images or
/// volumes), values drawn from N(0, 1) and labels uniform in [0, classes), of which this process
/// keeps `shard`. Sample i comes from its own stream `Rng(hash_combine(seed, i))` (label first,
/// then values), so its content depends only on (seed, i), never on the shard that holds it.
inline Dataset synthetic_dataset(std::size_t count, SampleDims dims, std::size_t classes, std::uint64_t seed,
                                 Shard shard = {}) {
  shard.validate("hpf::data::synthetic_dataset");
  const std::size_t local = shard.size_of(count);
  std::vector<float> values(shard.images ? local * dims.size() : 0);
  std::vector<std::int32_t> labels(shard.labels ? local : 0);
  if (shard.images || shard.labels) {
    for (std::size_t k = 0; k < local; ++k) {
      Rng rng(hash_combine(seed, shard.index + k * shard.count));
      const auto label = static_cast<std::int32_t>(rng.below(classes));
      if (shard.labels) labels[k] = label;
      if (!shard.images) continue;
      float* sample = values.data() + k * dims.size();
      for (std::size_t v = 0; v < dims.size(); ++v) sample[v] = static_cast<float>(rng.normal());
    }
  }
  return Dataset::from_values(count, dims, classes, shard, std::move(values), std::move(labels));
}
/// As above, for images of channels x height x width.
inline Dataset synthetic_dataset(std::size_t count, std::size_t channels, std::size_t height, std::size_t width,
                                 std::size_t classes, std::uint64_t seed, Shard shard = {}) {
  return synthetic_dataset(count, SampleDims{channels, height, width}, classes, seed, shard);
}

/// \brief A synthetic regression dataset: `count` samples of shape `dims` (images or volumes) of
/// N(0, 1) values as in synthetic_dataset, and `outputs` targets per sample,
/// t = tanh(W x / sqrt(dims.size())) + 0.1 noise, with W a fixed N(0, 1) matrix drawn from `seed`:
/// a smooth function a small network can learn. Sample i's values, targets and noise depend only
/// on (seed, i).
inline Dataset synthetic_regression(std::size_t count, SampleDims dims, std::size_t outputs, std::uint64_t seed,
                                    Shard shard = {}) {
  shard.validate("hpf::data::synthetic_regression");
  const std::size_t inputs = dims.size(), local = shard.size_of(count);
  std::vector<double> weights(outputs * inputs);
  Rng weight_rng(hash_combine(seed, ~std::uint64_t{0}));
  for (double& w : weights) w = weight_rng.normal();
  std::vector<float> values(shard.images ? local * inputs : 0), targets(shard.labels ? local * outputs : 0);
  std::vector<float> sample(inputs);
  for (std::size_t k = 0; k < local && (shard.images || shard.labels); ++k) {
    Rng rng(hash_combine(seed, shard.index + k * shard.count));
    for (float& v : sample) v = static_cast<float>(rng.normal());
    if (shard.images) std::copy(sample.begin(), sample.end(), values.begin() + static_cast<std::ptrdiff_t>(k * inputs));
    if (!shard.labels) continue;
    for (std::size_t t = 0; t < outputs; ++t) {
      double z = 0;
      for (std::size_t v = 0; v < inputs; ++v) z += weights[t * inputs + v] * sample[v];
      targets[k * outputs + t] = static_cast<float>(std::tanh(z / std::sqrt(static_cast<double>(inputs))) + 0.1 * rng.normal());
    }
  }
  return Dataset::regression(count, dims, outputs, shard, std::move(values), std::move(targets));
}
/// As above, for images of channels x height x width.
inline Dataset synthetic_regression(std::size_t count, std::size_t channels, std::size_t height, std::size_t width,
                                    std::size_t outputs, std::uint64_t seed, Shard shard = {}) {
  return synthetic_regression(count, SampleDims{channels, height, width}, outputs, seed, shard);
}

}  // namespace hpf::data

#endif  // HPF_DATA_SYNTHETIC_HPP
