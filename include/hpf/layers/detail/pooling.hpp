// SPDX-License-Identifier: MIT
#ifndef HPF_LAYERS_DETAIL_POOLING_HPP
#define HPF_LAYERS_DETAIL_POOLING_HPP

#include <hpf/layers/bind.hpp>
#include <hpf/layers/detail/window.hpp>

#include <Kokkos_Core.hpp>

#include <cstddef>
#include <cstdint>
#include <string>

namespace hpf {

namespace detail {

/// Input rows [first, last) of output row oh's window, clipped to the image (padding excluded).
KOKKOS_INLINE_FUNCTION Kokkos::pair<std::size_t, std::size_t> window_rows(const WindowGeometry& g, std::size_t oh) {
  const std::size_t top = oh * g.stride, bottom = top + g.kernel;
  return {top > g.pad ? top - g.pad : 0, bottom - g.pad < g.height ? bottom - g.pad : g.height};
}
/// Input columns [first, last) of output column ow's window, clipped to the image.
KOKKOS_INLINE_FUNCTION Kokkos::pair<std::size_t, std::size_t> window_cols(const WindowGeometry& g, std::size_t ow) {
  const std::size_t left = ow * g.stride, right = left + g.kernel;
  return {left > g.pad ? left - g.pad : 0, right - g.pad < g.width ? right - g.pad : g.width};
}

/// Shared compile-time part of MaxPool and AvgPool.
template <class Impl, std::size_t Kernel, std::size_t Stride, std::size_t Pad, class In>
struct bound_pool {
  static_assert(In::rank == 3, "hpf::MaxPool/AvgPool: the input must be an image (channels, height, width)");
  static_assert(In::rank != 3 || (In::height + 2 * Pad >= Kernel && In::width + 2 * Pad >= Kernel),
                "hpf::MaxPool/AvgPool: the window is larger than the padded input image");
  static_assert(2 * Pad <= Kernel, "hpf::MaxPool/AvgPool: padding may be at most half the window (as in PyTorch)");
  static_assert(Stride > 0, "hpf::MaxPool/AvgPool: Stride<S> must be positive");
  static constexpr bool accepted =
      Stride > 0 && In::rank == 3 && In::height + 2 * Pad >= Kernel && In::width + 2 * Pad >= Kernel;
  static constexpr WindowGeometry geometry{In::channels, In::height, In::width, Kernel, Stride, Pad};
  using input_shape = In;
  using output_shape = std::conditional_t<accepted, Shape<In::channels, geometry.out_height, geometry.out_width>, InvalidShape>;
  static constexpr std::size_t outputs = In::channels * geometry.out_height * geometry.out_width;
  static constexpr LayerCost cost{.forward_flops = outputs * Kernel * Kernel, .backward_flops = In::size * Kernel * Kernel,
                                  .activations = outputs, .saved_indices = Impl::saves_indices ? outputs : 0};
  static constexpr bool backward_reads_output = false;
  static constexpr bool in_place = false;
  static constexpr std::size_t leaves = 1;
  template <class T, class Space>
  struct impl : Impl::template type<T, Space> {
    impl() : Impl::template type<T, Space>(geometry) {}
  };
};
inline std::string describe_pool(const char* name, std::size_t k, std::size_t s, std::size_t p) {
  return std::string(name) + "(" + std::to_string(k) + "x" + std::to_string(k) +
         (s != k ? ", stride " + std::to_string(s) : std::string()) + (p ? ", pad " + std::to_string(p) : std::string()) + ")";
}

}  // namespace detail

}  // namespace hpf

#endif  // HPF_LAYERS_DETAIL_POOLING_HPP
