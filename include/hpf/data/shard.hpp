// SPDX-License-Identifier: MIT
#ifndef HPF_DATA_SHARD_HPP
#define HPF_DATA_SHARD_HPP

#include <cstddef>
#include <stdexcept>
#include <string>

namespace hpf::data {

/// \brief The part of a dataset one process keeps: shard `index` of `count` holds the global
/// samples i with `i % count == index` (strided, so a file sorted by class still gives every
/// shard every class), and of those only the images and/or labels its pipeline stage reads.
struct Shard {
  std::size_t index = 0, count = 1;
  bool images = true;  ///< needed by the first pipeline stage
  bool labels = true;  ///< needed by the last pipeline stage (the loss)

  /// True if global sample i belongs to this shard.
  constexpr bool holds(std::size_t i) const noexcept { return i % count == index; }
  /// How many of the samples 0..total-1 belong to this shard.
  constexpr std::size_t size_of(std::size_t total) const noexcept {
    return total > index ? (total - index + count - 1) / count : 0;
  }
  /// Throws std::invalid_argument unless `index < count`.
  void validate(const char* who) const {
    if (index >= count) {
      throw std::invalid_argument(std::string(who) + ": shard index " + std::to_string(index) +
                                  " is not below shard count " + std::to_string(count));
    }
  }
};

/// The shard of data-parallel replica `replica` (of `replicas`) at pipeline stage `stage` (of
/// `stages`): the first stage keeps the images, the last the labels, the ones between neither.
constexpr Shard pipeline_shard(std::size_t replica, std::size_t replicas, std::size_t stage,
                               std::size_t stages) noexcept {
  return Shard{replica, replicas, stage == 0, stage + 1 == stages};
}

}  // namespace hpf::data

#endif  // HPF_DATA_SHARD_HPP
