// SPDX-License-Identifier: MIT
#ifndef HPF_LAYERS_DETAIL_VOLUME_WINDOW_HPP
#define HPF_LAYERS_DETAIL_VOLUME_WINDOW_HPP

#include <hpf/layers/detail/window.hpp>

#include <Kokkos_Core.hpp>

#include <cstddef>

namespace hpf::detail {

/// Run-time geometry of a cubic window sliding over `[C][N][D*H*W]` volumes (Conv3D, 3-D
/// pooling): the window over one (H, W) plane, whose arithmetic the 2-D kernels already have,
/// plus the depth. The kernel, stride and padding are the same along all three axes.
struct VolumeGeometry {
  WindowGeometry plane;  // C, H, W, kernel, stride, pad and OH, OW
  std::size_t depth, out_depth;

  constexpr VolumeGeometry(std::size_t c, std::size_t d, std::size_t h, std::size_t w, std::size_t k, std::size_t s,
                           std::size_t p)
      : plane(c, h, w, k, s, p), depth(d), out_depth(window_output(d, k, s, p)) {}

  KOKKOS_INLINE_FUNCTION constexpr std::size_t channels() const { return plane.channels; }
  KOKKOS_INLINE_FUNCTION constexpr std::size_t kernel() const { return plane.kernel; }
  KOKKOS_INLINE_FUNCTION constexpr std::size_t stride() const { return plane.stride; }
  KOKKOS_INLINE_FUNCTION constexpr std::size_t pad() const { return plane.pad; }
  KOKKOS_INLINE_FUNCTION constexpr std::size_t in_spatial() const { return depth * plane.in_spatial(); }
  KOKKOS_INLINE_FUNCTION constexpr std::size_t out_spatial() const { return out_depth * plane.out_spatial(); }
  /// Rows of a vol2col matrix: C * K * K * K.
  KOKKOS_INLINE_FUNCTION constexpr std::size_t patch() const { return plane.patch() * plane.kernel; }

  /// Input depth index of output slice od at kernel offset kd, if it lies inside the volume.
  KOKKOS_INLINE_FUNCTION constexpr bool input_slice(std::size_t od, std::size_t kd, std::size_t& id) const {
    const std::size_t shifted = od * plane.stride + kd;  // id + pad
    id = shifted - plane.pad;
    return shifted >= plane.pad && id < depth;
  }
  /// Output depth index whose window reaches input slice id at kernel offset kd, if any (the
  /// adjoint of input_slice).
  KOKKOS_INLINE_FUNCTION constexpr bool output_slice(std::size_t id, std::size_t kd, std::size_t& od) const {
    const std::size_t shifted = id + plane.pad;  // od * stride + kd
    if (shifted < kd || (shifted - kd) % plane.stride != 0) return false;
    od = (shifted - kd) / plane.stride;
    return od < out_depth;
  }
};

}  // namespace hpf::detail

#endif  // HPF_LAYERS_DETAIL_VOLUME_WINDOW_HPP
