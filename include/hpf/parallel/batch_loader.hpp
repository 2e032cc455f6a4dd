// SPDX-License-Identifier: MIT
#ifndef HPF_PARALLEL_BATCH_LOADER_HPP
#define HPF_PARALLEL_BATCH_LOADER_HPP

#include <hpf/data/dataset.hpp>
#include <hpf/model/any_network.hpp>
#include <hpf/tensor/views.hpp>
#include <hpf/trace/region.hpp>

#include <Kokkos_Core.hpp>

#include <algorithm>
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
  /// The images of samples `indices` into `input` (a tape's `[C][n][S]` input), which holds
  /// positions `held` of each channel (a slab of every sample under hpf::Spatial<G>: the samples
  /// are read whole and the slab copied out).
  void load_inputs(const data::Dataset& dataset, std::span<const std::size_t> indices, const Activation<T, Space>& input,
                   const InputPositions& held) {
    trace::Region region("hpf::BatchLoader::inputs");
    if (held.all()) return fill(input, staging_, [&](T* out) { dataset.gather(indices, out); });
    fill(input, staging_, [&](T* out) {
      whole_.resize(input.extent(0) * indices.size() * held.whole);
      dataset.gather(indices, whole_.data());
      const std::size_t planes = input.extent(0) * indices.size();
      for (std::size_t plane = 0; plane < planes; ++plane) {
        const T* from = whole_.data() + plane * held.whole + held.first;
        std::copy(from, from + held.count, out + plane * held.count);
      }
    });
  }

  /// The targets of samples `indices` into `net`'s tape: class labels for a classifier, real
  /// values otherwise.
  void load_targets(const data::Dataset& dataset, std::span<const std::size_t> indices, const AnyNetwork<T, Space>& net,
                    const typename AnyNetwork<T, Space>::Tape& tape) {
    if (net.facts().classifier) {
      fill(net.labels(tape, indices.size()), label_staging_,
           [&](std::int32_t* out) { dataset.gather_labels(indices, out); });
    } else {
      fill(net.targets(tape, indices.size()), staging_, [&](T* out) { dataset.gather_targets(indices, out); });
    }
  }

 private:
  /// Lets `gather` write the contiguous view `target` directly, or through `staging` and one
  /// copy when the execution space's memory is not host-accessible.
  template <class View, class Value, class Gather>
  static void fill(const View& target, std::vector<Value>& staging, Gather&& gather) {
    if constexpr (host_accessible) {
      gather(target.data());
    } else {
      staging.resize(target.size());
      gather(staging.data());
      Kokkos::deep_copy(Kokkos::View<Value*, memory_space_t<Space>, Kokkos::MemoryTraits<Kokkos::Unmanaged>>(
                            target.data(), target.size()),
                        Kokkos::View<const Value*, Kokkos::HostSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>(
                            staging.data(), staging.size()));
    }
  }

  std::vector<T> staging_, whole_;  // whole_: the whole samples a slab is copied from
  std::vector<std::int32_t> label_staging_;
};

}  // namespace hpf

#endif  // HPF_PARALLEL_BATCH_LOADER_HPP
