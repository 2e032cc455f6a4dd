// SPDX-License-Identifier: MIT
#ifndef HPF_DATA_SAMPLER_HPP
#define HPF_DATA_SAMPLER_HPP

#include <hpf/data/shard.hpp>
#include <hpf/meta/hash.hpp>
#include <hpf/tensor/random.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace hpf::data {

/// \brief Cuts n items into `parts` contiguous, near-equal pieces and returns piece `part` as
/// [begin, end): the first n % parts pieces are one larger (e.g. a piece into micro-batches).
constexpr std::pair<std::size_t, std::size_t> split_range(std::size_t n, std::size_t parts, std::size_t part) {
  if (part >= parts) throw std::invalid_argument("hpf::data::split_range: part must be below parts");
  const std::size_t base = n / parts, extra = n % parts;
  const std::size_t begin = part * base + std::min(part, extra);
  return {begin, begin + base + (part < extra ? 1 : 0)};
}

/// \brief The order in which training visits samples, the same on every rank. Shard r of
/// `shards` (one per data-parallel replica) owns the global indices i with `i % shards == r`
/// (as Shard does) and, each epoch, visits them in a Fisher-Yates shuffle seeded by (seed, epoch,
/// r), `local_batch() = global_batch / shards` at a time. The last partial batch is kept, so in the
/// last step a shard may give fewer samples, or none. The global batch of a step is all shards'
/// pieces in shard order: a single process using `batch()` sees exactly what the replicas see
/// together, which is how parallel training is checked against serial training.
///
/// Each shard's permutation is cached for the epoch last asked for, so piece() copies a slice
/// instead of shuffling; the cache makes a Sampler unsafe to share between threads.
class Sampler {
 public:
  /// Throws std::invalid_argument unless dataset_size, global_batch and shards are positive and
  /// shards divides global_batch.
  Sampler(std::size_t dataset_size, std::size_t global_batch, std::size_t shards, std::uint64_t seed)
      : size_(dataset_size), global_batch_(global_batch), shards_(shards), seed_(seed) {
    if (dataset_size == 0 || global_batch == 0 || shards == 0) {
      throw std::invalid_argument("hpf::data::Sampler: dataset size, global batch and shard count must be positive");
    }
    if (global_batch % shards != 0) {
      throw std::invalid_argument("hpf::data::Sampler: global batch " + std::to_string(global_batch) +
                                  " is not divisible by the shard count " + std::to_string(shards));
    }
    const std::size_t largest = shard_size(0);
    steps_ = (largest + local_batch() - 1) / local_batch();
    permutations_.resize(shards);
    cached_epoch_.assign(shards, no_epoch);
  }

  /// Number of samples in the dataset.
  std::size_t dataset_size() const noexcept { return size_; }
  /// Samples per step over all shards.
  std::size_t global_batch() const noexcept { return global_batch_; }
  /// Samples per step in each shard (global_batch / shards).
  std::size_t local_batch() const noexcept { return global_batch_ / shards_; }
  /// Number of shards (data-parallel replicas).
  std::size_t shards() const noexcept { return shards_; }
  /// Steps per epoch: enough for the largest shard, the last one possibly partial.
  std::size_t steps_per_epoch() const noexcept { return steps_; }
  /// Number of samples shard `shard` owns.
  std::size_t shard_size(std::size_t shard) const noexcept { return Shard{shard, shards_}.size_of(size_); }

  /// The global indices shard `shard` visits in `epoch`, in order. Valid until this shard's
  /// permutation is next asked for with another epoch.
  std::span<const std::size_t> permutation(std::size_t epoch, std::size_t shard) {
    check_shard(shard);
    std::vector<std::size_t>& order = permutations_[shard];
    if (cached_epoch_[shard] != epoch) {
      order.resize(shard_size(shard));
      for (std::size_t k = 0; k < order.size(); ++k) order[k] = shard + k * shards_;
      Rng rng(hash_combine(hash_combine(seed_, epoch), shard));
      for (std::size_t k = order.size(); k > 1; --k) std::swap(order[k - 1], order[rng.below(k)]);
      cached_epoch_[shard] = epoch;
    }
    return order;
  }

  /// The global indices shard `shard` trains on at `step` of `epoch` (local_batch() of them, fewer
  /// in the last step).
  std::vector<std::size_t> piece(std::size_t epoch, std::size_t step, std::size_t shard) {
    if (step >= steps_) {
      throw std::out_of_range("hpf::data::Sampler: step " + std::to_string(step) + " is not below steps_per_epoch " +
                              std::to_string(steps_));
    }
    const std::span<const std::size_t> order = permutation(epoch, shard);
    const std::size_t begin = std::min(order.size(), step * local_batch());
    const std::size_t end = std::min(order.size(), begin + local_batch());
    return std::vector<std::size_t>(order.data() + begin, order.data() + end);
  }

  /// Samples in global batch `step` of any epoch (all shards; fewer than global_batch() in a short
  /// last step). The loss of a step is normalised by it, on every rank alike.
  std::size_t batch_size(std::size_t step) const noexcept {
    std::size_t total = 0;
    for (std::size_t r = 0; r < shards_; ++r) {
      const std::size_t held = shard_size(r), done = std::min(held, step * local_batch());
      total += std::min(local_batch(), held - done);
    }
    return total;
  }

  /// The whole global batch of `step` in `epoch`: every shard's piece, in shard order.
  std::vector<std::size_t> batch(std::size_t epoch, std::size_t step) {
    std::vector<std::size_t> indices;
    indices.reserve(global_batch_);
    for (std::size_t r = 0; r < shards_; ++r) {
      const auto part = piece(epoch, step, r);
      indices.insert(indices.end(), part.begin(), part.end());
    }
    return indices;
  }

 private:
  static constexpr std::size_t no_epoch = std::numeric_limits<std::size_t>::max();

  void check_shard(std::size_t shard) const {
    if (shard >= shards_) {
      throw std::out_of_range("hpf::data::Sampler: shard " + std::to_string(shard) + " is not below the shard count " +
                              std::to_string(shards_));
    }
  }

  std::size_t size_, global_batch_, shards_;
  std::uint64_t seed_;
  std::size_t steps_ = 0;
  std::vector<std::vector<std::size_t>> permutations_;
  std::vector<std::size_t> cached_epoch_;
};

}  // namespace hpf::data

#endif  // HPF_DATA_SAMPLER_HPP
