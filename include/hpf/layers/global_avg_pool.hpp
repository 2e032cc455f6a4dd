// SPDX-License-Identifier: MIT
#ifndef HPF_LAYERS_GLOBAL_AVG_POOL_HPP
#define HPF_LAYERS_GLOBAL_AVG_POOL_HPP

#include <hpf/layers/bind.hpp>
#include <hpf/layers/context.hpp>
#include <hpf/layers/detail/spatial_gather.hpp>
#include <hpf/layers/options.hpp>
#include <hpf/layers/parameters.hpp>
#include <hpf/tensor/spatial_part.hpp>
#include <hpf/trace/region.hpp>

#include <Kokkos_Core.hpp>

#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>

namespace hpf {

namespace detail {

/// Mean over each channel's H*W positions: `[C][N][HW]` -> `[C][N][1]`.
template <class T, class Space>
struct GlobalAvgPoolImpl : public ParameterFreeLayer {

  void forward(const Context<T, Space>& ctx, ConstActivation<T, Space> x, Activation<T, Space> y,
               tape_type&) const {
    trace::Region region("hpf::GlobalAvgPool::forward");
    const std::size_t n = x.extent(1), s = x.extent(2);
    const T inv = T(1) / T(s);
    Kokkos::parallel_for(
        "hpf::GlobalAvgPool::forward", Kokkos::RangePolicy<Space>(ctx.space, 0, x.extent(0) * n),
        KOKKOS_LAMBDA(const std::size_t item) {
          const std::size_t c = item / n, j = item % n;
          T sum = 0;
          for (std::size_t i = 0; i < s; ++i) sum += x(c, j, i);
          y(c, j, 0) = sum * inv;
        });
  }
  void backward(const Context<T, Space>& ctx, ConstActivation<T, Space>, ConstActivation<T, Space>,
                ConstActivation<T, Space> dy, Activation<T, Space> dx, tape_type&) const {
    if (is_empty(dx)) return;
    trace::Region region("hpf::GlobalAvgPool::backward");
    const std::size_t n = dx.extent(1), s = dx.extent(2);
    const T inv = T(1) / T(s);
    Kokkos::parallel_for(
        "hpf::GlobalAvgPool::backward", Kokkos::RangePolicy<Space>(ctx.space, 0, dx.extent(0) * n),
        KOKKOS_LAMBDA(const std::size_t item) {
          const std::size_t c = item / n, j = item % n;
          const T g = dy(c, j, 0) * inv;
          for (std::size_t i = 0; i < s; ++i) dx(c, j, i) = g;
        });
  }
};

}  // namespace detail

/// \brief Mean over the positions of each channel, giving a vector of channels: over height and
/// width of an image (PyTorch's AdaptiveAvgPool2d(1) followed by flatten), over a volume's depth,
/// height and width (AdaptiveAvgPool3d(1)), over a sequence's positions (`x.mean(dim=1)` on
/// `[N, T, D]`).
/// On a sample split into slabs (hpf::Spatial<G>) the group adds its members' sums.
struct GlobalAvgPool {
  template <class In>
  struct bind {
    static_assert(In::rank >= 2,
                  "hpf::GlobalAvgPool: the input must be an image (channels, height, width), a volume or a sequence");
    using input_shape = In;
    using output_shape = std::conditional_t<In::rank >= 2, Shape<In::channels>, InvalidShape>;
    // On slabs with peers: the group adds the members' sums, C per sample.
    static constexpr LayerCost cost{
        .forward_flops = In::size, .backward_flops = In::size, .activations = In::channels,
        .group = {.forward_gathers = spatial_peers_v<In> ? 1u : 0u, .forward_per_sample = spatial_peers_v<In> ? In::channels : 0}};
    static constexpr bool backward_reads_output = false;
    static constexpr bool in_place = false;
    static constexpr bool takes_spatial_parts = true;  // adds the slabs' sums
    static constexpr std::size_t leaves = 1;
    static std::string describe() { return "GlobalAvgPool"; }
    template <class T, class Space>
    struct slab_impl : detail::SpatialGlobalAvgPoolImpl<T, Space> {
      slab_impl()
          : detail::SpatialGlobalAvgPoolImpl<T, Space>(In::channels, spatial_group_v<In>, spatial_held_v<In>,
                                                       whole_shape_t<In>::spatial) {}
    };
    template <class T, class Space>
    using impl = std::conditional_t<is_spatial_part_v<In>, slab_impl<T, Space>, detail::GlobalAvgPoolImpl<T, Space>>;
  };
};

}  // namespace hpf

#endif  // HPF_LAYERS_GLOBAL_AVG_POOL_HPP
