// SPDX-License-Identifier: MIT
#ifndef HPF_LAYERS_DETAIL_MAX_POOL_ROWS_HPP
#define HPF_LAYERS_DETAIL_MAX_POOL_ROWS_HPP

#include <cstddef>
#include <cstdint>

#if defined(__AVX512F__)
#include <immintrin.h>
#define HPF_MAX_POOL_ROWS 1
#else
#define HPF_MAX_POOL_ROWS 0
#endif

namespace hpf::detail {

#if HPF_MAX_POOL_ROWS
/// \brief 2 x 2 max pooling with stride 2 and no padding of one float plane, 16 outputs of a row
/// per AVX-512 vector: the same maxima and argmaxes as pool_plane<2, 2>'s scan, bit for bit (a
/// later NaN wins, else the first strict maximum). The scalar scan ran a 14- or 7-wide row as a
/// partial vector and a scalar tail, branching per window: 16 % of a bf16 step of the CNN.
/// `width` is the input row's length (2 * out_width, or one more when odd).
inline void max_pool_2x2_plane(const float* image, std::int32_t width, std::int32_t out_height,
                               std::int32_t out_width, float* out, std::int32_t* where) {
  const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
  const __m512i odd = _mm512_add_epi32(even, _mm512_set1_epi32(1));
  for (std::int32_t oh = 0; oh < out_height; ++oh) {
    const float* top = image + 2 * oh * width;
    for (std::int32_t ow = 0; ow < out_width; ow += 16) {
      const std::int32_t outputs = out_width - ow < 16 ? out_width - ow : 16;
      const std::int32_t inputs = 2 * outputs;  // 2 .. 32 floats of each row
      const __mmask16 low = static_cast<__mmask16>(inputs >= 16 ? 0xFFFFu : (1u << inputs) - 1u);
      const __mmask16 high = static_cast<__mmask16>(inputs <= 16 ? 0u : (1u << (inputs - 16)) - 1u);
      const __mmask16 lanes = static_cast<__mmask16>(outputs == 16 ? 0xFFFFu : (1u << outputs) - 1u);
      // The window's four pixels in scan order, and the index of its first.
      __m512 row[2][2];
      for (int kh = 0; kh < 2; ++kh) {
        const float* r = top + kh * width + 2 * ow;
        const __m512 a = _mm512_maskz_loadu_ps(low, r), b = _mm512_maskz_loadu_ps(high, r + 16);
        row[kh][0] = _mm512_permutex2var_ps(a, even, b);
        row[kh][1] = _mm512_permutex2var_ps(a, odd, b);
      }
      const __m512i first = _mm512_add_epi32(_mm512_set1_epi32(2 * oh * width + 2 * ow), even);
      __m512 best = row[0][0];
      __m512i at = first;
      for (int k = 1; k < 4; ++k) {
        const int kh = k / 2, kw = k % 2;
        const __m512 v = row[kh][kw];
        const __mmask16 take = _mm512_cmp_ps_mask(v, best, _CMP_GT_OQ) | _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
        best = _mm512_mask_mov_ps(best, take, v);
        at = _mm512_mask_mov_epi32(at, take, _mm512_add_epi32(first, _mm512_set1_epi32(kh * width + kw)));
      }
      _mm512_mask_storeu_ps(out + oh * out_width + ow, lanes, best);
      _mm512_mask_storeu_epi32(where + oh * out_width + ow, lanes, at);
    }
  }
}
#endif

}  // namespace hpf::detail

#endif  // HPF_LAYERS_DETAIL_MAX_POOL_ROWS_HPP
