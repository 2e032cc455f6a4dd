// SPDX-License-Identifier: MIT
#ifndef HPF_LAYERS_DETAIL_POOLING_HPP
#define HPF_LAYERS_DETAIL_POOLING_HPP

#include <hpf/layers/bind.hpp>
#include <hpf/layers/detail/volume_window.hpp>
#include <hpf/layers/detail/window.hpp>
#include <hpf/tensor/spatial_part.hpp>

#include <Kokkos_Core.hpp>

#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>

namespace hpf {

namespace detail {

/// Input indices [first, last) along an axis of `extent` values covered by output index o's
/// window, clipped to the input (padding excluded).
KOKKOS_INLINE_FUNCTION Kokkos::pair<std::size_t, std::size_t> window_span(const WindowGeometry& g, std::size_t o,
                                                                          std::size_t extent) {
  const std::size_t begin = o * g.stride, end = begin + g.kernel;
  return {begin > g.pad ? begin - g.pad : 0, end - g.pad < extent ? end - g.pad : extent};
}
/// Input rows [first, last) of output row oh's window, clipped to the image (padding excluded).
KOKKOS_INLINE_FUNCTION Kokkos::pair<std::size_t, std::size_t> window_rows(const WindowGeometry& g, std::size_t oh) {
  return window_span(g, oh, g.height);
}
/// Input columns [first, last) of output column ow's window, clipped to the image.
KOKKOS_INLINE_FUNCTION Kokkos::pair<std::size_t, std::size_t> window_cols(const WindowGeometry& g, std::size_t ow) {
  return window_span(g, ow, g.width);
}
/// Input slices [first, last) of output slice od's window, clipped to the volume.
KOKKOS_INLINE_FUNCTION Kokkos::pair<std::size_t, std::size_t> window_depths(const VolumeGeometry& g, std::size_t od) {
  return window_span(g.plane, od, g.depth);
}

/// PyTorch's max-pooling rule for the next value v (at index i) of a window in scan order: it
/// wins if it is larger or NaN, so the first maximum wins, and a NaN wins (the last one if
/// several), as in PyTorch's CPU kernels (`v > best || isnan(v)`). Selects, not branches: pooled
/// values are close to random and mispredicted branches would dominate.
template <class T>
KOKKOS_INLINE_FUNCTION void keep_max(T v, std::int32_t i, T& best, std::int32_t& at) {
  const bool take = (v > best) | (v != v);
  best = take ? v : best;
  at = take ? i : at;
}

/// Shared compile-time part of MaxPool and AvgPool.
/// The compile error of a pooling window that would read two members' slabs.
template <class In, std::size_t Kernel, std::size_t Stride, std::size_t Pad>
struct pool_window_crosses_slabs {
  static_assert(Kernel == 0,
                "hpf::Spatial<G>: MaxPool/AvgPool on samples split into slabs of rows needs windows inside a slab: "
                "a window as large as its stride, no padding, and a stride that divides each member's rows "
                "(height / G; depth / G for MaxPool3D/AvgPool3D)");
};

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
  // A sample split into slabs (hpf::Spatial<G>) pools each slab by itself: windows must not cross one.
  using whole_in = whole_shape_t<In>;
  static constexpr std::size_t members = spatial_group_v<In>;
  static constexpr bool slabs_align = members == 1 || (Kernel == Stride && Pad == 0 && whole_in::height / members % Stride == 0);
  static_assert(sizeof(std::conditional_t<slabs_align, char, pool_window_crosses_slabs<In, Kernel, Stride, Pad>>));
  static constexpr WindowGeometry whole_geometry{In::channels, whole_in::height, whole_in::width, Kernel, Stride, Pad};
  using input_shape = In;
  using output_shape = std::conditional_t<accepted && slabs_align,
                                          part_like_t<In, Shape<In::channels, whole_geometry.out_height, whole_geometry.out_width>>,
                                          InvalidShape>;
  static constexpr bool takes_spatial_parts = true;
  static constexpr std::size_t outputs = In::channels * geometry.out_height * geometry.out_width;
  static constexpr LayerCost cost{.forward_flops = outputs * Kernel * Kernel, .backward_flops = In::size * Kernel * Kernel,
                                  .activations = outputs, .saved_indices = Impl::saves_indices ? outputs : 0};
  static constexpr bool backward_reads_output = false;
  static constexpr bool in_place = false;
  static constexpr bool applies_previous_relu = Impl::applies_previous_relu;  // forward_ and backward_after_relu
  static constexpr std::size_t leaves = 1;
  template <class T, class Space>
  struct impl : Impl::template type<T, Space> {
    impl() : Impl::template type<T, Space>(geometry) {}
  };
};

/// Shared compile-time part of MaxPool3D and AvgPool3D: a cubic window over `Shape<C, D, H, W>`.
template <class In>
struct pool3d_input_not_a_volume {
  static_assert(In::rank == 4,
                "hpf::MaxPool3D/AvgPool3D: the input must be a volume Shape<C, D, H, W> (hpf::MaxPool/AvgPool pool images)");
};
template <class In, std::size_t Kernel, std::size_t Pad>
struct pool3d_window_larger_than_padded_volume {
  static_assert(In::depth + 2 * Pad >= Kernel && In::height + 2 * Pad >= Kernel && In::width + 2 * Pad >= Kernel,
                "hpf::MaxPool3D/AvgPool3D: the window is larger than the padded input volume");
};
template <class Impl, std::size_t Kernel, std::size_t Stride, std::size_t Pad, class In>
struct bound_pool3d {
  static_assert(2 * Pad <= Kernel, "hpf::MaxPool3D/AvgPool3D: padding may be at most half the window (as in PyTorch)");
  static_assert(Stride > 0, "hpf::MaxPool3D/AvgPool3D: Stride<S> must be positive");
  static constexpr bool volume = In::rank == 4;
  static constexpr bool fits =
      In::depth + 2 * Pad >= Kernel && In::height + 2 * Pad >= Kernel && In::width + 2 * Pad >= Kernel;
  // One error, naming the shape in its first line: not a volume, else a window too large.
  using too_large = pool3d_window_larger_than_padded_volume<In, Kernel, Pad>;
  static_assert(sizeof(std::conditional_t<!volume, pool3d_input_not_a_volume<In>, std::conditional_t<fits, char, too_large>>));
  static constexpr bool accepted = Stride > 0 && volume && fits;
  static constexpr VolumeGeometry geometry{In::channels, In::depth, In::height, In::width, Kernel, Stride, Pad};
  // Volumes split into slabs of planes (hpf::Spatial<G>) pool each slab by itself, as images do.
  using whole_in = whole_shape_t<In>;
  static constexpr std::size_t members = spatial_group_v<In>;
  static constexpr bool slabs_align = members == 1 || (Kernel == Stride && Pad == 0 && whole_in::depth / members % Stride == 0);
  static_assert(sizeof(std::conditional_t<slabs_align, char, pool_window_crosses_slabs<In, Kernel, Stride, Pad>>));
  static constexpr VolumeGeometry whole_geometry{In::channels, whole_in::depth, In::height, In::width, Kernel, Stride, Pad};
  using input_shape = In;
  using output_shape = std::conditional_t<
      accepted && slabs_align,
      part_like_t<In, Shape<In::channels, whole_geometry.out_depth, geometry.plane.out_height, geometry.plane.out_width>>,
      InvalidShape>;
  static constexpr bool takes_spatial_parts = true;
  static constexpr std::size_t outputs = In::channels * geometry.out_spatial();
  static constexpr std::size_t window = Kernel * Kernel * Kernel;
  static constexpr LayerCost cost{.forward_flops = outputs * window, .backward_flops = In::size * window,
                                  .activations = outputs, .saved_indices = Impl::saves_indices ? outputs : 0};
  static constexpr bool backward_reads_output = false;
  static constexpr bool in_place = false;
  static constexpr bool applies_previous_relu = Impl::applies_previous_relu;  // forward_ and backward_after_relu
  static constexpr std::size_t leaves = 1;
  template <class T, class Space>
  struct impl : Impl::template type<T, Space> {
    impl() : Impl::template type<T, Space>(geometry) {}
  };
};

/// "MaxPool(3x3, stride 2, pad 1)"; `axes` 3 for a cubic window ("2x2x2").
inline std::string describe_pool(const char* name, std::size_t k, std::size_t s, std::size_t p, std::size_t axes = 2) {
  std::string window = std::to_string(k);
  for (std::size_t a = 1; a < axes; ++a) {
    window += 'x';  // not "x" + to_string(k): g++ 12 -O3 warns (-Wrestrict) on prepending a literal
    window += std::to_string(k);
  }
  return std::string(name) + "(" + window + (s != k ? ", stride " + std::to_string(s) : std::string()) +
         (p ? ", pad " + std::to_string(p) : std::string()) + ")";
}

}  // namespace detail

}  // namespace hpf

#endif  // HPF_LAYERS_DETAIL_POOLING_HPP
