// SPDX-License-Identifier: MIT
#ifndef HPF_DATA_SYNTHETIC_HPP
#define HPF_DATA_SYNTHETIC_HPP

#include <hpf/data/dataset.hpp>
#include <hpf/data/shard.hpp>
#include <hpf/meta/hash.hpp>
#include <hpf/tensor/random.hpp>

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace hpf::data {

/// \brief A synthetic dataset for benchmarks: `count` samples of channels x height x width values
/// drawn from N(0, 1) and labels uniform in [0, classes), of which this process keeps `shard`.
/// Sample i comes from its own stream `Rng(hash_combine(seed, i))` (label first, then values), so
/// its content depends only on (seed, i), never on the shard that holds it.
inline Dataset synthetic_dataset(std::size_t count, std::size_t channels, std::size_t height, std::size_t width,
                                 std::size_t classes, std::uint64_t seed, Shard shard = {}) {
  shard.validate("hpf::data::synthetic_dataset");
  const SampleDims dims{channels, height, width};
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

}  // namespace hpf::data

#endif  // HPF_DATA_SYNTHETIC_HPP
