// SPDX-License-Identifier: MIT
#ifndef HPF_LAYERS_DETAIL_WINDOW_HPP
#define HPF_LAYERS_DETAIL_WINDOW_HPP

#include <Kokkos_Core.hpp>

#include <cstddef>

namespace hpf::detail {

/// Output extent of a sliding window: floor((in + 2 pad - kernel) / stride) + 1, or 0 if the
/// padded input is smaller than the kernel (layers reject that at compile time).
constexpr std::size_t window_output(std::size_t in, std::size_t kernel, std::size_t stride, std::size_t pad) {
  return stride > 0 && in + 2 * pad >= kernel ? (in + 2 * pad - kernel) / stride + 1 : 0;
}

/// Run-time geometry of a square window sliding over `[C][N][H*W]` images (convolution, pooling).
struct WindowGeometry {
  std::size_t channels, height, width;  // input C, H, W
  std::size_t kernel, stride, pad;
  std::size_t out_height, out_width;

  constexpr WindowGeometry(std::size_t c, std::size_t h, std::size_t w, std::size_t k, std::size_t s, std::size_t p)
      : channels(c), height(h), width(w), kernel(k), stride(s), pad(p),
        out_height(window_output(h, k, s, p)), out_width(window_output(w, k, s, p)) {}

  KOKKOS_INLINE_FUNCTION constexpr std::size_t in_spatial() const { return height * width; }
  KOKKOS_INLINE_FUNCTION constexpr std::size_t out_spatial() const { return out_height * out_width; }
  /// Rows of an im2col matrix: C * K * K.
  KOKKOS_INLINE_FUNCTION constexpr std::size_t patch() const { return channels * kernel * kernel; }

  /// First and one-past-last output column o with 0 <= o*stride - pad + k < extent.
  KOKKOS_INLINE_FUNCTION constexpr std::size_t first_valid(std::size_t k) const {
    return k >= pad ? 0 : (pad - k + stride - 1) / stride;
  }
  KOKKOS_INLINE_FUNCTION constexpr std::size_t end_valid(std::size_t k, std::size_t extent, std::size_t outs) const {
    // o*stride + k - pad <= extent - 1  <=>  o <= (extent - 1 + pad - k) / stride
    if (extent + pad <= k) return 0;
    const std::size_t last = (extent - 1 + pad - k) / stride + 1;
    return last < outs ? last : outs;
  }
};

}  // namespace hpf::detail

#endif  // HPF_LAYERS_DETAIL_WINDOW_HPP
