// SPDX-License-Identifier: MIT
#ifndef HPF_LAYERS_LAYER_SPLIT_HPP
#define HPF_LAYERS_LAYER_SPLIT_HPP

#include <hpf/tensor/ordered_sum.hpp>
#include <hpf/tensor/views.hpp>

#include <cstddef>
#include <span>
#include <stdexcept>
#include <string>

namespace hpf {

/// How Dense, Conv2D and Conv3D layers divide their work among the members of a group (ParaDL's
/// filter and channel parallelism; Megatron's column- and row-parallel linear layers).
enum class SplitKind {
  none,
  /// Member m computes outputs (filters, output channels) [m F / G, (m + 1) F / G) from the whole input; forward
  /// gathers the outputs, backward adds the members' input gradients in a fixed tree.
  filter,
  /// Member m reads inputs (input channels) [m C / G, (m + 1) C / G); forward adds the members'
  /// partial outputs in a fixed tree, backward gathers the input gradient.
  channel,
  /// Member m holds slab m of every sample (rows of an image, planes of a volume; hpf::SpatialPart):
  /// convolutions exchange halos with the neighbouring members, BatchNorm and the parameters'
  /// gradients add the members' partial sums in a fixed tree, Flatten and GlobalAvgPool gather the
  /// whole sample.
  spatial,
};

/// Where a Dense layer sits in an hpf::DensePair, which a filter or channel split runs as
/// Megatron's column- then row-parallel pair: one sum over the group per pass for both layers.
enum class PairRole {
  /// Not in a pair: the split's own kind.
  none,
  /// The first: member m computes its outputs from the whole input and keeps them (the other
  /// members' are zeros, no gather); backward adds the members' input gradients in the tree.
  column,
  /// The second: member m reads only its inputs, the first's outputs, and forward adds the
  /// members' partial outputs in the tree; backward keeps its members' input gradient (zeros
  /// elsewhere, no gather).
  row,
};

/// \brief A split of a network's Dense and convolution layers over `group` members. The parts are added in
/// hpf::ordered_sum's tree, so one process that computes every member's part (hpf::Trainer)
/// and G processes that compute one each (hpf::fit) get the same bits; a split network's bits
/// differ from an unsplit one's only by the order of those additions.
struct LayerSplit {
  SplitKind kind = SplitKind::none;
  std::size_t group = 1;

  static constexpr LayerSplit filter(std::size_t group) { return {SplitKind::filter, group}; }
  static constexpr LayerSplit channel(std::size_t group) { return {SplitKind::channel, group}; }
  static constexpr LayerSplit spatial(std::size_t group) { return {SplitKind::spatial, group}; }
  /// Whether layers split at all (a group of one computes everything).
  constexpr bool splits() const { return kind != SplitKind::none && group > 1; }
  /// Whether Dense and convolution layers divide their filters or channels (not the samples' slabs).
  constexpr bool divides_layers() const { return splits() && kind != SplitKind::spatial; }
  /// Ranks that share each stage of a replica: the group, or 1 without a split.
  constexpr std::size_t ranks() const { return splits() ? group : 1; }
  constexpr bool operator==(const LayerSplit&) const = default;

  /// "none", "filter", "channel" or "spatial" (none for a group of one).
  const char* kind_name() const {
    if (!splits()) return "none";
    return kind == SplitKind::filter ? "filter" : kind == SplitKind::channel ? "channel" : "spatial";
  }
  /// "none", "filter split over 2", "spatial split over 4".
  std::string describe() const {
    if (!splits()) return "none";
    return std::string(kind_name()) + " split over " + std::to_string(group);
  }
  /// Throws std::invalid_argument unless the group has 1 to ordered_sum_max_parts members.
  void check() const {
    if (group == 0 || group > ordered_sum_max_parts) {
      throw std::invalid_argument("hpf: a layer split's group has " + std::to_string(group) + " members; it takes 1 to " +
                                  std::to_string(ordered_sum_max_parts));
    }
  }
  /// The split "filter:G", "channel:G" or "spatial:G" names (command lines), checked;
  /// std::invalid_argument saying what was wrong otherwise.
  static LayerSplit parse(const std::string& text) {
    const auto colon = text.find(':');
    const std::string kind = text.substr(0, colon), count = colon == std::string::npos ? "" : text.substr(colon + 1);
    if ((kind != "filter" && kind != "channel" && kind != "spatial") || count.empty() ||
        count.find_first_not_of("0123456789") != std::string::npos || count.size() > 6) {
      throw std::invalid_argument("hpf: a layer split is filter:G, channel:G or spatial:G, not '" + text + "'");
    }
    const SplitKind parsed = kind == "filter" ? SplitKind::filter : kind == "channel" ? SplitKind::channel : SplitKind::spatial;
    const LayerSplit split{parsed, std::stoul(count)};
    split.check();
    return split;
  }
};

/// First of member m's `n / group` (or one more) things; member m holds [split_begin(m), split_begin(m + 1)).
constexpr std::size_t split_begin(std::size_t n, std::size_t group, std::size_t member) { return member * n / group; }

/// Base of LayerGroup (KernelResources holds it for any scalar and space).
struct LayerGroupBase {
  virtual ~LayerGroupBase() = default;
};

/// \brief The collectives of a split layer's group. This process computes the parts of members
/// [first_member(), first_member() + local_members()): all of them in one process, one each on
/// the ranks of a group (hpf::MpiLayerGroup).
template <class T, class Space>
class LayerGroup : public LayerGroupBase {
 public:
  virtual std::size_t size() const = 0;
  virtual std::size_t first_member() const = 0;
  virtual std::size_t local_members() const = 0;
  /// `data` holds one part per member, member m's in [bounds[m], bounds[m + 1]) (elements). On
  /// entry this process's members' parts are final; on return every member's is.
  virtual void gather(T* data, std::span<const std::size_t> bounds) const = 0;
  /// out[0, n) = the sum over members of their parts, in ordered_sum's tree; `mine` holds this
  /// process's members' parts, n elements each, one after another.
  virtual void sum(const T* mine, std::size_t n, T* out) const = 0;
  /// all[m n, (m + 1) n) = member m's n elements, for every member; `mine` holds this process's
  /// members' parts, n elements each, one after another.
  virtual void gather_parts(const T* mine, std::size_t n, T* all) const = 0;
  /// Starts swapping the edges of spatial slabs: sends `to_previous` to member first_member() - 1
  /// and receives `from_previous` from it, and likewise with member first_member() +
  /// local_members(); a neighbour past either end of the group is skipped. Counts are elements.
  /// The buffers are the swap's until finish_swap_edges(); one swap at a time.
  virtual void start_swap_edges(const T* to_previous, std::size_t to_previous_count, T* from_previous,
                                std::size_t from_previous_count, const T* to_next, std::size_t to_next_count,
                                T* from_next, std::size_t from_next_count) const = 0;
  /// Returns once the swap started last has received every edge and sent every edge.
  virtual void finish_swap_edges() const = 0;
  /// start_swap_edges and finish_swap_edges at once.
  void swap_edges(const T* to_previous, std::size_t to_previous_count, T* from_previous, std::size_t from_previous_count,
                  const T* to_next, std::size_t to_next_count, T* from_next, std::size_t from_next_count) const {
    start_swap_edges(to_previous, to_previous_count, from_previous, from_previous_count, to_next, to_next_count, from_next,
                     from_next_count);
    finish_swap_edges();
  }
};

/// \brief The group of one process that computes every member's part: gathering moves nothing,
/// summing adds the parts it holds.
template <class T, class Space>
class LocalLayerGroup final : public LayerGroup<T, Space> {
 public:
  explicit LocalLayerGroup(std::size_t members) : members_(members) {}
  std::size_t size() const override { return members_; }
  std::size_t first_member() const override { return 0; }
  std::size_t local_members() const override { return members_; }
  void gather(T*, std::span<const std::size_t>) const override {}
  void sum(const T* mine, std::size_t n, T* out) const override { ordered_sum(Space{}, mine, members_, n, out, n); }
  void gather_parts(const T* mine, std::size_t n, T* all) const override {
    using Flat = Kokkos::View<T*, memory_space_t<Space>, Kokkos::MemoryTraits<Kokkos::Unmanaged>>;
    if (mine != all) Kokkos::deep_copy(Space{}, Flat(all, members_ * n), Flat(const_cast<T*>(mine), members_ * n));
  }
  /// Every member is this process's: no neighbour to swap with.
  void start_swap_edges(const T*, std::size_t, T*, std::size_t, const T*, std::size_t, T*, std::size_t) const override {}
  void finish_swap_edges() const override {}

 private:
  std::size_t members_;
};

/// \brief One member of a group whose other members are absent: what the performance oracle's
/// calibration runs to time and size one rank's part of a split alone (hpf/oracle/calibrate.hpp).
/// It moves nothing and waits for no one: absent neighbours' halos and gathered parts are zeros,
/// and a sum adds this member's part to zeros in the group's tree (the arithmetic a rank does).
/// Its results are not the group's: never train with it.
template <class T, class Space>
class AbsentPeersLayerGroup final : public LayerGroup<T, Space> {
  using Flat = Kokkos::View<T*, memory_space_t<Space>, Kokkos::MemoryTraits<Kokkos::Unmanaged>>;

 public:
  /// This process is member `member` (0 to members - 1) of `members`.
  explicit AbsentPeersLayerGroup(std::size_t members, std::size_t member = 0) : members_(members), member_(member) {}
  std::size_t size() const override { return members_; }
  std::size_t first_member() const override { return member_; }
  std::size_t local_members() const override { return 1; }
  /// The absent members' parts are zeros: left as they were, a buffer's stale or never-written
  /// values (denormals) made a member of the MLP's filter split 30 times slower than it runs.
  void gather(T* data, std::span<const std::size_t> bounds) const override {
    Kokkos::deep_copy(Space{}, Flat(data + bounds[0], bounds[member_] - bounds[0]), T(0));
    Kokkos::deep_copy(Space{}, Flat(data + bounds[member_ + 1], bounds[members_] - bounds[member_ + 1]), T(0));
  }
  void sum(const T* mine, std::size_t n, T* out) const override {
    ensure_capacity(all_, members_ * n, "hpf::AbsentPeersLayerGroup::split_parts");
    gather_parts(mine, n, all_.data());
    ordered_sum(Space{}, all_.data(), members_, n, out, n);
  }
  /// `mine` may be `all`'s first part: it is copied to its place before the others are zeroed.
  void gather_parts(const T* mine, std::size_t n, T* all) const override {
    if (mine != all + member_ * n) Kokkos::deep_copy(Space{}, Flat(all + member_ * n, n), Flat(const_cast<T*>(mine), n));
    Kokkos::deep_copy(Space{}, Flat(all, member_ * n), T(0));
    Kokkos::deep_copy(Space{}, Flat(all + (member_ + 1) * n, (members_ - member_ - 1) * n), T(0));
  }
  void start_swap_edges(const T*, std::size_t, T* from_previous, std::size_t from_previous_count, const T*, std::size_t,
                        T* from_next, std::size_t from_next_count) const override {
    Kokkos::deep_copy(Space{}, Flat(from_previous, from_previous_count), T(0));
    Kokkos::deep_copy(Space{}, Flat(from_next, from_next_count), T(0));
  }
  void finish_swap_edges() const override {}

 private:
  std::size_t members_, member_;
  mutable Buffer<T, Space> all_;
};

}  // namespace hpf

#endif  // HPF_LAYERS_LAYER_SPLIT_HPP
