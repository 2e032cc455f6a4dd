// SPDX-License-Identifier: MIT
#ifndef HPF_LAYERS_DETAIL_MAX_POOL_ROWS_HPP
#define HPF_LAYERS_DETAIL_MAX_POOL_ROWS_HPP

#include <hpf/layers/detail/window.hpp>

#include <Kokkos_Core.hpp>

#include <cstddef>
#include <cstdint>
#include <type_traits>

#if defined(__AVX512F__)
#include <immintrin.h>
#define HPF_MAX_POOL_ROWS 1
#else
#define HPF_MAX_POOL_ROWS 0
#endif

namespace hpf::detail {

/// Whether MaxPool and MaxPool3D of element type T on Space pool with the vector rows below (where
/// HPF_MAX_POOL_ROWS): float, on the host.
template <class T, class Space>
inline constexpr bool max_pool_rows_for =
    std::is_same_v<T, float> && std::is_same_v<typename Space::memory_space, Kokkos::HostSpace>;
/// Whether a window is one the rows take: two pixels wide, stride 2, unpadded (a volume's: its plane's).
inline bool max_pool_rows_fit(const WindowGeometry& g) { return g.pad == 0 && g.kernel == 2 && g.stride == 2; }

#if HPF_MAX_POOL_ROWS
/// v, or with Relu relu(v) lane by lane, with relu's bits (v > 0 ? v : +0): VMAXPS returns its
/// second operand, +0, where v is NaN or a zero of either sign; one instruction per pixel vector.
/// (The masked form with every lane selected: see channel_blocks.hpp.)
template <bool Relu>
inline __m512 relu_lanes_if(__m512 v) {
  if constexpr (Relu) return _mm512_mask_max_ps(v, 0xffff, v, _mm512_setzero_ps());
  return v;
}

/// \brief One line of max-pooling windows two pixels wide with stride 2 and no padding, 16
/// outputs per AVX-512 vector: the same maxima and argmaxes as the scalar scans (pool_plane<2, 2>,
/// pool_volume<2>), bit for bit: a later NaN wins, else the first strict maximum. The scalar scans
/// ran a 14- or 7-wide row as a partial vector and a scalar tail, branching per window: 16 % of a
/// bf16 step of the CNN. `Rows` rows of each window, in scan order, at `offsets` from the line's
/// first window (`first`, whose index in its plane or volume is `first_index`); each row's two
/// pixels are taken left then right. With Relu, each pixel is read through a ReLU (relu's bits:
/// one not above zero, or NaN, reads +0).
template <bool Relu, int Rows>
inline void max_pool_pairs_line(const float* first, std::int32_t first_index, const std::int32_t (&offsets)[Rows],
                                std::int32_t outputs, float* out, std::int32_t* where) {
  const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
  const __m512i odd = _mm512_add_epi32(even, _mm512_set1_epi32(1));
  for (std::int32_t o = 0; o < outputs; o += 16) {
    const std::int32_t here = outputs - o < 16 ? outputs - o : 16;
    const std::int32_t inputs = 2 * here;  // 2 .. 32 floats of each row
    const __mmask16 low = static_cast<__mmask16>(inputs >= 16 ? 0xFFFFu : (1u << inputs) - 1u);
    const __mmask16 high = static_cast<__mmask16>(inputs <= 16 ? 0u : (1u << (inputs - 16)) - 1u);
    const __mmask16 lanes = static_cast<__mmask16>(here == 16 ? 0xFFFFu : (1u << here) - 1u);
    const __m512i left = _mm512_add_epi32(_mm512_set1_epi32(first_index + 2 * o), even);  // the windows' first pixels
    __m512 best = _mm512_setzero_ps();
    __m512i at = left;
    for (int r = 0; r < Rows; ++r) {
      const float* row = first + offsets[r] + 2 * o;
      const __m512 a = _mm512_maskz_loadu_ps(low, row), b = _mm512_maskz_loadu_ps(high, row + 16);
      const __m512 pixel[2] = {relu_lanes_if<Relu>(_mm512_permutex2var_ps(a, even, b)),
                               relu_lanes_if<Relu>(_mm512_permutex2var_ps(a, odd, b))};
      for (int kw = 0; kw < 2; ++kw) {
        const __m512 v = pixel[kw];
        if (r == 0 && kw == 0) {
          best = v;
          continue;
        }
        const __mmask16 take = _mm512_cmp_ps_mask(v, best, _CMP_GT_OQ) | _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
        best = _mm512_mask_mov_ps(best, take, v);
        at = _mm512_mask_mov_epi32(at, take, _mm512_add_epi32(left, _mm512_set1_epi32(offsets[r] + kw)));
      }
    }
    _mm512_mask_storeu_ps(out + o, lanes, best);
    _mm512_mask_storeu_epi32(where + o, lanes, at);
  }
}

/// Asks for the `floats` from `from` on, one cache line at a time. The pools read a window's rows
/// a few lines at a time and waited on memory: the Fashion-MNIST CNN's two pools (bf16, one
/// thread) took 0.55 ms per step after a ReLU's pass over their input, 0.83 ms reading the
/// convolutions' outputs straight (taking the ReLU), and with these requests 0.52 ms; the
/// first alone pooled its data in cache in a third of its time in the step.
inline void prefetch(const float* from, std::int32_t floats) {
  const char* bytes = reinterpret_cast<const char*>(from);
  const std::int32_t size = floats * static_cast<std::int32_t>(sizeof(float));
  for (std::int32_t at = 0; at < size; at += 64) _mm_prefetch(bytes + at, _MM_HINT_T0);
}
/// How far ahead the pools ask for input rows: 8 rows, 4 windows' heights.
inline constexpr std::int32_t prefetch_rows = 8;

/// 2 x 2 max pooling with stride 2 and no padding of one float `height x width` plane (width
/// 2 * out_width, or one more when odd), as pool_plane<2, 2, Relu>.
template <bool Relu>
inline void max_pool_2x2_plane(const float* image, std::int32_t width, std::int32_t out_height,
                               std::int32_t out_width, float* out, std::int32_t* where) {
  const std::int32_t offsets[2] = {0, width};
  for (std::int32_t oh = 0; oh < out_height; ++oh) {
    const std::int32_t top = 2 * oh * width;
    prefetch(image + top + prefetch_rows * width, 2 * width);  // the next plane's first rows at the end
    max_pool_pairs_line<Relu>(image + top, top, offsets, out_width, out + oh * out_width, where + oh * out_width);
  }
}

/// 2 x 2 x 2 max pooling with stride 2 and no padding of one float `depth x height x width`
/// volume, as pool_volume<2, Relu> with stride 2.
template <bool Relu>
inline void max_pool_2x2x2_volume(const float* volume, std::int32_t height, std::int32_t width, std::int32_t out_depth,
                                  std::int32_t out_height, std::int32_t out_width, float* out, std::int32_t* where) {
  const std::int32_t plane = height * width;
  const std::int32_t offsets[4] = {0, width, plane, plane + width};  // (d, h) in scan order
  for (std::int32_t od = 0; od < out_depth; ++od) {
    for (std::int32_t oh = 0; oh < out_height; ++oh) {
      const std::int32_t corner = 2 * od * plane + 2 * oh * width;
      const std::int32_t line = (od * out_height + oh) * out_width;
      for (const std::int32_t offset : offsets) prefetch(volume + corner + offset + prefetch_rows * width, width);
      max_pool_pairs_line<Relu>(volume + corner, corner, offsets, out_width, out + line, where + line);
    }
  }
}
#endif

}  // namespace hpf::detail

#endif  // HPF_LAYERS_DETAIL_MAX_POOL_ROWS_HPP
