// SPDX-License-Identifier: MIT
#ifndef HPF_LAYERS_FLATTEN_HPP
#define HPF_LAYERS_FLATTEN_HPP

#include <hpf/layers/bind.hpp>
#include <hpf/layers/context.hpp>
#include <hpf/layers/detail/spatial_gather.hpp>
#include <hpf/layers/parameters.hpp>
#include <hpf/tensor/spatial_part.hpp>
#include <hpf/trace/region.hpp>

#include <Kokkos_Core.hpp>

#include <cstddef>
#include <string>
#include <type_traits>

namespace hpf {

namespace detail {
/// `[C][N][S]` -> `[C*S][N][1]` in PyTorch's flatten order, so a following Dense layer's weight is
/// interchangeable with PyTorch's: feature c*S + s of CHW images, s*C + c of a sequence `[N, T, D]`
/// (position s, feature c).
template <class T, class Space, bool Sequence>
struct FlattenImpl : public ParameterFreeLayer {
  /// Where flat feature f comes from: (channel, position).
  KOKKOS_INLINE_FUNCTION static Kokkos::pair<std::size_t, std::size_t> source(std::size_t f, std::size_t c_count,
                                                                             std::size_t s_count) {
    if constexpr (Sequence) {
      return {f % c_count, f / c_count};
    } else {
      return {f / s_count, f % s_count};
    }
  }

  void forward(const Context<T, Space>& ctx, ConstActivation<T, Space> x, Activation<T, Space> y,
               tape_type&) const {
    trace::Region region("hpf::Flatten::forward");
    const std::size_t c_count = x.extent(0), n = x.extent(1), s_count = x.extent(2);
    T* out = y.data();
    Kokkos::parallel_for(
        "hpf::Flatten::forward", Kokkos::RangePolicy<Space>(ctx.space, 0, c_count * s_count),
        KOKKOS_LAMBDA(const std::size_t f) {
          const auto [c, s] = source(f, c_count, s_count);
          for (std::size_t j = 0; j < n; ++j) out[f * n + j] = x(c, j, s);
        });
  }
  void backward(const Context<T, Space>& ctx, ConstActivation<T, Space>, ConstActivation<T, Space>,
                ConstActivation<T, Space> dy, Activation<T, Space> dx, tape_type&) const {
    if (is_empty(dx)) return;
    trace::Region region("hpf::Flatten::backward");
    const std::size_t c_count = dx.extent(0), n = dx.extent(1), s_count = dx.extent(2);
    const T* grad_out = dy.data();
    Kokkos::parallel_for(
        "hpf::Flatten::backward", Kokkos::RangePolicy<Space>(ctx.space, 0, c_count * s_count),
        KOKKOS_LAMBDA(const std::size_t f) {
          const auto [c, s] = source(f, c_count, s_count);
          for (std::size_t j = 0; j < n; ++j) dx(c, j, s) = grad_out[f * n + j];
        });
  }
};
}  // namespace detail

/// \brief Flattens a sample to a feature vector in PyTorch's order: (C, H, W) for images, (T, D)
/// for sequences.
/// On a sample split into slabs (hpf::Spatial<G>) it gathers the whole sample from the group.
struct Flatten {
  template <class In>
  struct bind {
    using input_shape = In;
    using output_shape = Shape<whole_shape_t<In>::size>;
    // On slabs with peers: the group gathers every member's slab (this one's, per sample).
    static constexpr LayerCost cost{
        .activations = output_shape::size,
        .group = {.forward_gathers = spatial_peers_v<In> ? 1u : 0u, .forward_per_sample = spatial_peers_v<In> ? In::size : 0}};
    static constexpr bool backward_reads_output = false;
    static constexpr bool in_place = false;
    static constexpr bool takes_spatial_parts = true;  // gathers the slabs
    static constexpr std::size_t leaves = 1;
    static std::string describe() { return "Flatten"; }
    template <class T, class Space>
    struct slab_impl : detail::SpatialFlattenImpl<T, Space> {
      slab_impl()
          : detail::SpatialFlattenImpl<T, Space>(In::channels, spatial_group_v<In>, spatial_held_v<In>, whole_shape_t<In>::spatial) {}
    };
    template <class T, class Space>
    using impl = std::conditional_t<is_spatial_part_v<In>, slab_impl<T, Space>, detail::FlattenImpl<T, Space, In::sequence>>;
  };
};

}  // namespace hpf

#endif  // HPF_LAYERS_FLATTEN_HPP
