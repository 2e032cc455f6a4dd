// SPDX-License-Identifier: MIT
#ifndef HPF_PARALLEL_MPI_LAYER_GROUP_HPP
#define HPF_PARALLEL_MPI_LAYER_GROUP_HPP

#include <hpf/comm/communicator.hpp>
#include <hpf/comm/transfer.hpp>
#include <hpf/layers/layer_split.hpp>
#include <hpf/tensor/ordered_sum.hpp>
#include <hpf/tensor/views.hpp>
#include <hpf/trace/span.hpp>

#include <Kokkos_Core.hpp>

#include <cstddef>
#include <cstdint>
#include <span>

namespace hpf {

/// \brief The collectives of split layers among the ranks of a group (ProcessGrid::group()):
/// rank m computes member m's part. Gathering is MPI_Allgatherv in place; a sum gathers every
/// member's part and adds them in ordered_sum's tree, the tree LocalLayerGroup adds in, so G
/// ranks and one process get the same bits. Each is a blocking span on the timeline's
/// collective row ("gather in group", "sum in group").
template <class T, class Space>
class MpiLayerGroup final : public LayerGroup<T, Space> {
  using Flat = Kokkos::View<T*, memory_space_t<Space>, Kokkos::MemoryTraits<Kokkos::Unmanaged>>;
  using ConstFlat = Kokkos::View<const T*, memory_space_t<Space>, Kokkos::MemoryTraits<Kokkos::Unmanaged>>;

 public:
  explicit MpiLayerGroup(comm::Communicator group) : group_(std::move(group)) {}

  std::size_t size() const override { return static_cast<std::size_t>(group_.size()); }
  std::size_t first_member() const override { return static_cast<std::size_t>(group_.rank()); }
  std::size_t local_members() const override { return 1; }

  void gather(T* data, std::span<const std::size_t> bounds) const override {
    comm::Parts parts;
    for (std::size_t m = 0; m + 1 < bounds.size(); ++m) {
      parts.counts.push_back(static_cast<int>(bounds[m + 1] - bounds[m]));
      parts.offsets.push_back(static_cast<int>(bounds[m]));
    }
    trace::Blocking span(trace::Track::collective, "gather in group", {.bytes = bytes(bounds.back())});
    Space().fence();
    comm::iallgatherv_in_place(group_, Flat(data, bounds.back()), std::move(parts), what()).wait();
  }

  void sum(const T* mine, std::size_t n, T* out) const override {
    ensure_capacity(all_, size() * n, "hpf::MpiLayerGroup::parts");
    {
      trace::Blocking span(trace::Track::collective, "sum in group", {.bytes = bytes(size() * n)});
      Space().fence();
      comm::iallgather(group_, ConstFlat(mine, n), Flat(all_.data(), size() * n), what()).wait();
    }
    ordered_sum(Space{}, all_.data(), size(), n, out, n);
  }

 private:
  static comm::WaitFor what() { return {.what = "a split layer's parts", .members = "the layer's group"}; }
  static std::int64_t bytes(std::size_t elements) { return static_cast<std::int64_t>(elements * sizeof(T)); }

  comm::Communicator group_;
  mutable Buffer<T, Space> all_;
};

}  // namespace hpf

#endif  // HPF_PARALLEL_MPI_LAYER_GROUP_HPP
