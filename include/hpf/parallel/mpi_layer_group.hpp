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
#include <vector>

namespace hpf {

/// \brief The collectives of split layers among the ranks of a group (ProcessGrid::group()):
/// rank m computes member m's part. Gathering is MPI_Allgatherv in place; a sum gathers every
/// member's part and adds them in ordered_sum's tree, the tree LocalLayerGroup adds in, so G
/// ranks and one process get the same bits. Spatial slabs swap their edges with the neighbouring
/// ranks, without blocking until finish_swap_edges. On the timeline's group row: "gather in
/// group" and "sum in group" block; "halo exchange" lasts from its start to its finish, and the
/// wait row holds the part of it the rank waited for.
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
    trace::Blocking span(trace::Track::group, "gather in group", {.bytes = bytes(bounds.back())});
    Space().fence();
    comm::iallgatherv_in_place(group_, Flat(data, bounds.back()), std::move(parts), what()).wait();
  }

  void sum(const T* mine, std::size_t n, T* out) const override {
    ensure_capacity(all_, size() * n, "hpf::MpiLayerGroup::split_parts");
    allgather(mine, n, all_.data(), "sum in group");
    ordered_sum(Space{}, all_.data(), size(), n, out, n);
  }

  void gather_parts(const T* mine, std::size_t n, T* all) const override { allgather(mine, n, all, "gather in group"); }

  void start_swap_edges(const T* to_previous, std::size_t to_previous_count, T* from_previous,
                        std::size_t from_previous_count, const T* to_next, std::size_t to_next_count, T* from_next,
                        std::size_t from_next_count) const override {
    const int me = group_.rank(), previous = me - 1, next = me + 1;
    const bool has_previous = previous >= 0, has_next = next < group_.size();
    const std::size_t moved = (has_previous ? to_previous_count + from_previous_count : 0) +
                              (has_next ? to_next_count + from_next_count : 0);
    Space().fence();  // the edges sent are written
    swap_span_ = trace::Pending::open(trace::Track::group, "halo exchange", {.bytes = bytes(moved)});
    const comm::WaitFor halo{.what = "a spatial layer's halo", .members = "the layer's group"};
    // Tags by direction: a slab's edge going down the group, and one going up.
    constexpr int down = 1, up = 2;
    swapping_.clear();
    if (has_previous && from_previous_count > 0)
      swapping_.push_back(comm::irecv(group_, Flat(from_previous, from_previous_count), previous, down, halo));
    if (has_next && from_next_count > 0) swapping_.push_back(comm::irecv(group_, Flat(from_next, from_next_count), next, up, halo));
    if (has_previous && to_previous_count > 0)
      swapping_.push_back(comm::isend(group_, ConstFlat(to_previous, to_previous_count), previous, up, halo));
    if (has_next && to_next_count > 0) swapping_.push_back(comm::isend(group_, ConstFlat(to_next, to_next_count), next, down, halo));
  }
  void finish_swap_edges() const override {
    for (auto& request : swapping_) trace::wait(request, "halo exchange");
    swapping_.clear();
    swap_span_.close();
  }

 private:
  /// Every member's n elements into all[G n), a blocking span `name` on the group row.
  void allgather(const T* mine, std::size_t n, T* all, const char* name) const {
    trace::Blocking span(trace::Track::group, name, {.bytes = bytes(size() * n)});
    Space().fence();
    comm::iallgather(group_, ConstFlat(mine, n), Flat(all, size() * n), what()).wait();
  }
  static comm::WaitFor what() { return {.what = "a split layer's parts", .members = "the layer's group"}; }
  static std::int64_t bytes(std::size_t elements) { return static_cast<std::int64_t>(elements * sizeof(T)); }

  comm::Communicator group_;
  mutable Buffer<T, Space> all_;
  mutable std::vector<comm::Request> swapping_;  // the halo swap in flight
  mutable trace::Pending swap_span_;
};

}  // namespace hpf

#endif  // HPF_PARALLEL_MPI_LAYER_GROUP_HPP
