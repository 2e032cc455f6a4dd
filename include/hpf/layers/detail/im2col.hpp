// SPDX-License-Identifier: MIT
#ifndef HPF_LAYERS_DETAIL_IM2COL_HPP
#define HPF_LAYERS_DETAIL_IM2COL_HPP

#include <hpf/layers/detail/window.hpp>
#include <hpf/tensor/views.hpp>

#include <Kokkos_Core.hpp>

#include <cstddef>

namespace hpf::detail {

/// One patch row's columns over one image plane: out[oh*OW + ow] = image[ih*W + iw] with
/// ih = oh*S - P + kh, iw = ow*S - P + kw, zero outside the image. Shared by im2col and vol2col.
template <class T>
KOKKOS_INLINE_FUNCTION void im2col_plane(const WindowGeometry& g, std::size_t kh, std::size_t kw, const T* image,
                                         T* out) {
  const std::size_t ow_begin = g.first_valid(kw), ow_end = g.end_valid(kw, g.width, g.out_width);
  for (std::size_t oh = 0; oh < g.out_height; ++oh) {
    T* out_row = out + oh * g.out_width;
    const std::size_t ih = oh * g.stride + kh;  // + pad offset below
    if (ih < g.pad || ih - g.pad >= g.height) {
      for (std::size_t ow = 0; ow < g.out_width; ++ow) out_row[ow] = T(0);
      continue;
    }
    const T* in_row = image + (ih - g.pad) * g.width;
    for (std::size_t ow = 0; ow < ow_begin; ++ow) out_row[ow] = T(0);
    if (g.stride == 1) {
      const T* src = in_row + kw - g.pad;  // in range for ow in [ow_begin, ow_end)
      for (std::size_t ow = ow_begin; ow < ow_end; ++ow) out_row[ow] = src[ow];
    } else {
      for (std::size_t ow = ow_begin; ow < ow_end; ++ow) out_row[ow] = in_row[ow * g.stride + kw - g.pad];
    }
    for (std::size_t ow = ow_end; ow < g.out_width; ++ow) out_row[ow] = T(0);
  }
}

/// Columns for images [first, first + count) of x `[C][N][H*W]`:
///   col[(c*K + kh)*K + kw][j*OH*OW + oh*OW + ow] = x[c][first + j][ih*W + iw],
/// ih = oh*S - P + kh, iw = ow*S - P + kw, zero outside the image. One work item per
/// (patch row, image) writes OH*OW contiguous values.
template <class T, class Space>
void im2col(const Space& space, const WindowGeometry& g, ConstActivation<T, Space> x, std::size_t first,
            std::size_t count, Matrix<T, Space> col) {
  const std::size_t k2 = g.kernel * g.kernel;
  Kokkos::parallel_for(
      "hpf::im2col", Kokkos::RangePolicy<Space>(space, 0, g.patch() * count),
      KOKKOS_LAMBDA(const std::size_t item) {
        const std::size_t row = item / count, j = item % count;
        const std::size_t c = row / k2, kh = (row % k2) / g.kernel, kw = row % g.kernel;
        im2col_plane(g, kh, kw, &x(c, first + j, 0), &col(row, j * g.out_spatial()));
      });
}

/// Adds to one input row `out` (row ih of a plane, W values) what the columns hold for it:
/// out[iw] += col row (kh*K + kw) at column oh*OW + ow, for every (kh, kw, oh, ow) whose window
/// position is (ih, iw), in the order kh, kw, ow. `rows` is the first of the channel's K*K column
/// rows at the plane's first column, `row_stride` the distance between column rows. Shared by
/// col2im and col2vol.
template <class T>
KOKKOS_INLINE_FUNCTION void col2im_row(const WindowGeometry& g, std::size_t ih, const T* rows, std::size_t row_stride,
                                       T* out) {
  for (std::size_t kh = 0; kh < g.kernel; ++kh) {
    const std::size_t h_shift = ih + g.pad;  // = oh*S + kh
    if (h_shift < kh || (h_shift - kh) % g.stride != 0) continue;
    const std::size_t oh = (h_shift - kh) / g.stride;
    if (oh >= g.out_height) continue;
    for (std::size_t kw = 0; kw < g.kernel; ++kw) {
      const T* src = rows + (kh * g.kernel + kw) * row_stride + oh * g.out_width;
      if (g.stride == 1) {
        // ow = iw + pad - kw over its valid range
        const std::size_t iw_begin = kw > g.pad ? kw - g.pad : 0;
        std::size_t iw_end = g.out_width + kw;
        iw_end = iw_end > g.pad ? iw_end - g.pad : 0;
        iw_end = iw_end < g.width ? iw_end : g.width;
        for (std::size_t iw = iw_begin; iw < iw_end; ++iw) out[iw] += src[iw + g.pad - kw];
      } else {
        for (std::size_t iw = 0; iw < g.width; ++iw) {
          const std::size_t w_shift = iw + g.pad;
          if (w_shift < kw || (w_shift - kw) % g.stride != 0) continue;
          const std::size_t ow = (w_shift - kw) / g.stride;
          if (ow < g.out_width) out[iw] += src[ow];
        }
      }
    }
  }
}

/// Adjoint of im2col, gathering: dx[c][first + j][ih*W + iw] = sum of the col entries im2col
/// copied from that pixel. Each dx element is written by exactly one work item (no atomics).
template <class T, class Space>
void col2im(const Space& space, const WindowGeometry& g, Matrix<const T, Space> col, std::size_t first,
            std::size_t count, Activation<T, Space> dx) {
  Kokkos::parallel_for(
      "hpf::col2im", Kokkos::RangePolicy<Space>(space, 0, g.channels * count * g.height),
      KOKKOS_LAMBDA(const std::size_t item) {
        const std::size_t c = item / (count * g.height);
        const std::size_t j = (item / g.height) % count, ih = item % g.height;
        T* out = &dx(c, first + j, ih * g.width);
        for (std::size_t iw = 0; iw < g.width; ++iw) out[iw] = T(0);
        col2im_row(g, ih, &col(c * g.kernel * g.kernel, j * g.out_spatial()), col.stride(0), out);
      });
}

}  // namespace hpf::detail

#endif  // HPF_LAYERS_DETAIL_IM2COL_HPP
