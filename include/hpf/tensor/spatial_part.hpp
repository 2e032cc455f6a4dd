// SPDX-License-Identifier: MIT
#ifndef HPF_TENSOR_SPATIAL_PART_HPP
#define HPF_TENSOR_SPATIAL_PART_HPP

#include <hpf/tensor/shape.hpp>

#include <cstddef>
#include <type_traits>

namespace hpf {

namespace detail {
/// Whole's extents with the split axis (depth of a volume, height of an image) scaled by Held / Group.
template <class Whole, std::size_t Group, std::size_t Held, std::size_t Rank = Whole::rank>
struct held_shape {
  using type = InvalidShape;
};
template <class Whole, std::size_t Group, std::size_t Held>
struct held_shape<Whole, Group, Held, 3> {
  using type = Shape<Whole::channels, Whole::height / Group * Held, Whole::width>;
};
template <class Whole, std::size_t Group, std::size_t Held>
struct held_shape<Whole, Group, Held, 4> {
  using type = Shape<Whole::channels, Whole::depth / Group * Held, Whole::height, Whole::width>;
};
}  // namespace detail

/// \brief The part of a sample one process holds under spatial parallelism (hpf::Spatial<G>):
/// the sample `Whole` (an image or a volume) cut along its outermost spatial axis (height of an
/// image, depth of a volume) into `Group` slabs of equal thickness, one per member of a group,
/// of which this process holds `Held` consecutive ones (1 on the ranks of a group; all of them
/// in one process that computes every member's part, as hpf::Trainer does).
///
/// It is a Shape of the held extents (what buffers are sized by) that remembers the whole: layers
/// that split compute their output's whole shape and wrap it again (part_like_t), and the layers
/// that need the whole sample (Flatten, GlobalAvgPool) gather it and give a plain Shape.
template <class Whole, std::size_t Group, std::size_t Held>
struct SpatialPart : detail::held_shape<Whole, Group, Held>::type {
  static_assert(Whole::rank == 3 || Whole::rank == 4,
                "hpf::Spatial<G>: only images (channels, height, width) and volumes (channels, depth, height, "
                "width) split into slabs");
  static_assert(Group >= 1 && (Held == 1 || Held == Group),
                "hpf::SpatialPart: a process holds one member's slab or all of them");
  using whole = Whole;
  static constexpr std::size_t group = Group;
  static constexpr std::size_t held = Held;
  /// Elements per channel of one member's slab (a contiguous range of a channel's positions).
  static constexpr std::size_t slab_spatial = Whole::spatial / Group;
};

template <class S>
inline constexpr bool is_spatial_part_v = false;
template <class Whole, std::size_t Group, std::size_t Held>
inline constexpr bool is_spatial_part_v<SpatialPart<Whole, Group, Held>> = true;

namespace detail {
template <class S>
struct whole_shape {
  using type = S;
};
template <class Whole, std::size_t Group, std::size_t Held>
struct whole_shape<SpatialPart<Whole, Group, Held>> {
  using type = Whole;
};
template <class In, class WholeOut>
struct part_like {
  using type = WholeOut;
};
template <class Whole, std::size_t Group, std::size_t Held, class WholeOut>
struct part_like<SpatialPart<Whole, Group, Held>, WholeOut> {
  using type = std::conditional_t<WholeOut::valid, SpatialPart<WholeOut, Group, Held>, InvalidShape>;
};
}  // namespace detail

/// The whole sample's shape of S (S itself unless it is a SpatialPart).
template <class S>
using whole_shape_t = typename detail::whole_shape<S>::type;

/// A layer's output for input In whose whole output is WholeOut: WholeOut split as In is.
template <class In, class WholeOut>
using part_like_t = typename detail::part_like<In, WholeOut>::type;

/// Members of the group a shape is split among (1 when it is not split).
template <class S>
inline constexpr std::size_t spatial_group_v = [] {
  if constexpr (is_spatial_part_v<S>) {
    return S::group;
  } else {
    return std::size_t{1};
  }
}();

/// Members whose slabs a process holding S holds (1 when S is not split).
template <class S>
inline constexpr std::size_t spatial_held_v = [] {
  if constexpr (is_spatial_part_v<S>) {
    return S::held;
  } else {
    return std::size_t{1};
  }
}();

/// Whether a process holding S exchanges with other processes: S is split and it holds only some
/// of the members' slabs.
template <class S>
inline constexpr bool spatial_peers_v = spatial_held_v<S> < spatial_group_v<S>;

}  // namespace hpf

#endif  // HPF_TENSOR_SPATIAL_PART_HPP
