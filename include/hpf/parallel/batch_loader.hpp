// SPDX-License-Identifier: MIT
#ifndef HPF_PARALLEL_BATCH_LOADER_HPP
#define HPF_PARALLEL_BATCH_LOADER_HPP

#include <hpf/data/dataset.hpp>
#include <hpf/model/network.hpp>
#include <hpf/trace/region.hpp>

#include <Kokkos_Core.hpp>

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace hpf {

/// \brief Copies samples of a dataset into a network tape: images into its `[C][n][S]` input,
/// targets (labels or real values) into its targets. On host execution spaces it writes the tape directly; otherwise it
/// stages through reusable host buffers and copies once.
template <class T, class Space>
class BatchLoader {
  static constexpr bool host_accessible =
      Kokkos::SpaceAccessibility<Kokkos::HostSpace, memory_space_t<Space>>::accessible;

 public:
  template <class Net>
  void load_inputs(const data::Dataset& dataset, std::span<const std::size_t> indices, Net& net,
                   typename Net::Tape& tape) {
    trace::Region region("hpf::BatchLoader::inputs");
    const auto input = net.input(tape, indices.size());
    if constexpr (host_accessible) {
      dataset.gather(indices, input.data());
    } else {
      staging_.resize(input.size());
      dataset.gather(indices, staging_.data());
      Kokkos::deep_copy(input, Kokkos::View<const T***, Kokkos::LayoutRight, Kokkos::HostSpace,
                                            Kokkos::MemoryTraits<Kokkos::Unmanaged>>(
                                   staging_.data(), input.extent(0), input.extent(1), input.extent(2)));
    }
  }

  /// The targets of samples `indices`: class labels for a classifier, real values otherwise.
  template <class Net>
  void load_targets(const data::Dataset& dataset, std::span<const std::size_t> indices, Net& net,
                    typename Net::Tape& tape) {
    if constexpr (Net::classifier) {
      const auto labels = net.labels(tape, indices.size());
      if constexpr (host_accessible) {
        dataset.gather_labels(indices, labels.data());
      } else {
        label_staging_.resize(indices.size());
        dataset.gather_labels(indices, label_staging_.data());
        Kokkos::deep_copy(labels, Kokkos::View<const std::int32_t*, Kokkos::HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>(
                                      label_staging_.data(), indices.size()));
      }
    } else {
      const auto targets = net.targets(tape, indices.size());
      if constexpr (host_accessible) {
        dataset.gather_targets(indices, targets.data());
      } else {
        staging_.resize(targets.size());
        dataset.gather_targets(indices, staging_.data());
        Kokkos::deep_copy(targets, Kokkos::View<const T*, Kokkos::HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>(
                                       staging_.data(), targets.size()));
      }
    }
  }

 private:
  std::vector<T> staging_;
  std::vector<std::int32_t> label_staging_;
};

}  // namespace hpf

#endif  // HPF_PARALLEL_BATCH_LOADER_HPP
