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

/// Calls f(oh, ow) for every output window of g that covers input pixel (ih, iw): the gather
/// form of a pooling backward, so each input gradient has exactly one writer.
template <class F>
KOKKOS_INLINE_FUNCTION void for_each_covering_window(const WindowGeometry& g, std::size_t ih, std::size_t iw, F&& f) {
  // oh*S - P + kh = ih, 0 <= kh < K  =>  oh in [ceil((ih + P - K + 1) / S), (ih + P) / S]
  const std::size_t h = ih + g.pad, w = iw + g.pad;
  const std::size_t oh_begin = h + 1 > g.kernel ? (h + 1 - g.kernel + g.stride - 1) / g.stride : 0;
  const std::size_t ow_begin = w + 1 > g.kernel ? (w + 1 - g.kernel + g.stride - 1) / g.stride : 0;
  std::size_t oh_end = h / g.stride + 1, ow_end = w / g.stride + 1;
  oh_end = oh_end < g.out_height ? oh_end : g.out_height;
  ow_end = ow_end < g.out_width ? ow_end : g.out_width;
  for (std::size_t oh = oh_begin; oh < oh_end; ++oh)
    for (std::size_t ow = ow_begin; ow < ow_end; ++ow) f(oh, ow);
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
                                  .activations = outputs};
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
