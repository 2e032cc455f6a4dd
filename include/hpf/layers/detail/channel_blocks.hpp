// SPDX-License-Identifier: MIT
#ifndef HPF_LAYERS_DETAIL_CHANNEL_BLOCKS_HPP
#define HPF_LAYERS_DETAIL_CHANNEL_BLOCKS_HPP

#include <hpf/tensor/bf16.hpp>

#include <algorithm>
#include <cstddef>
#include <cstring>

#if defined(__AVX512F__)
#include <immintrin.h>
#define HPF_CHANNEL_BLOCKS 1
#else
#define HPF_CHANNEL_BLOCKS 0
#endif
// bf16 moves: AVX512-BF16's conversion, stored with AVX512BW's 16-bit masks.
#if HPF_CHANNEL_BLOCKS && defined(__AVX512BF16__) && defined(__AVX512BW__) && defined(__AVX512VL__)
#define HPF_CHANNEL_BLOCKS_BF16 1
#else
#define HPF_CHANNEL_BLOCKS_BF16 0
#endif

namespace hpf::detail {

/// \brief Activations moved between hpf's layout and the channels-innermost layouts oneDNN's
/// convolutions read and write: 16-channel blocks (`nChw16c`, `nCdhw16c`: its AVX-512 and
/// AVX512-BF16 kernels here) or channels last (`nhwc`, `ndhwc`: its brgemm-based kernels').
///
/// hpf's `[C][batch][spatial]`: channel c of image i at `c * channel_stride + i * spatial`.
/// Blocks: `[images][ceil(C / 16)][spatial][16]`, the channels past C zero; channels last:
/// `[images][spatial][C]`. A move is a 16 x 16 transpose of registers per 16 channels and 16
/// pixels. oneDNN's reorders took a third of a bf16 ResNet-20 step (one core of an AMD EPYC with
/// AVX512-BF16, oneDNN 2.6), and 1.3-1.9x the moves' time out of blocks and 3-4x into them
/// (ResNet-20's activations, in cache; from memory, the moves are bound by its bandwidth).
/// Compiled where the compiler targets AVX-512 (bf16: AVX512-BF16, whose conversion is the one
/// oneDNN's reorders run, subnormals flushed, so the bits do not depend on which one moved them);
/// elsewhere oneDNN's reorders move activations (channel_blocks_available; the moves below exist
/// where HPF_CHANNEL_BLOCKS).
struct ChannelBlocks {
  static constexpr std::size_t block = 16;
  enum class Layout { blocks, channels_last };  // the other layout
  Layout layout = Layout::blocks;
  std::size_t images = 0, channels = 0, spatial = 0;
  std::size_t channel_stride = 0;  // hpf's, in floats: batch * spatial

  std::size_t channel_blocks() const { return (channels + block - 1) / block; }
  /// The channels of block b: 16, or fewer in the last block.
  std::size_t channels_in(std::size_t b) const { return std::min(block, channels - b * block); }
  /// Where channel block b of an image starts in the other layout, and the elements between its
  /// pixels there.
  std::size_t start(std::size_t image, std::size_t b) const {
    return layout == Layout::blocks ? (image * channel_blocks() + b) * spatial * block
                                    : image * spatial * channels + b * block;
  }
  std::size_t pixel_stride() const { return layout == Layout::blocks ? block : channels; }
  /// The channels of block b a pixel has there: a block's 16 (the padding zero), or channels last
  /// only the real ones.
  std::size_t stored(std::size_t b) const { return layout == Layout::blocks ? block : channels_in(b); }
};

/// Whether this build moves activations of element type T (float or bf16_bits) out of hpf's
/// layout here; moves into it are float only.
template <class T>
constexpr bool channel_blocks_available() {
  if constexpr (sizeof(T) == sizeof(float)) return HPF_CHANNEL_BLOCKS;
  return HPF_CHANNEL_BLOCKS_BF16;
}

#if HPF_CHANNEL_BLOCKS
namespace channel_blocks_detail {

// The unmasked forms of these shuffles start from _mm512_undefined_ps(), which g++ 12 reports as
// maybe uninitialized under -Werror (its PR 105593): the masked forms with every lane selected
// are the same instructions.
inline __m512 low_pairs(__m512 a, __m512 b) { return _mm512_mask_unpacklo_ps(a, 0xffff, a, b); }
inline __m512 high_pairs(__m512 a, __m512 b) { return _mm512_mask_unpackhi_ps(a, 0xffff, a, b); }
inline __m512 low_quads(__m512 a, __m512 b) {
  return _mm512_castpd_ps(_mm512_mask_unpacklo_pd(_mm512_castps_pd(a), 0xff, _mm512_castps_pd(a), _mm512_castps_pd(b)));
}
inline __m512 high_quads(__m512 a, __m512 b) {
  return _mm512_castpd_ps(_mm512_mask_unpackhi_pd(_mm512_castps_pd(a), 0xff, _mm512_castps_pd(a), _mm512_castps_pd(b)));
}
template <int lanes>  // 128-bit lanes: two of a's, then two of b's
inline __m512 lanes_of(__m512 a, __m512 b) { return _mm512_mask_shuffle_f32x4(a, 0xffff, a, b, lanes); }

/// rows[i] becomes column i: rows[j][i] = old rows[i][j].
inline void transpose(__m512 rows[16]) {
  __m512 pairs[16], quads[16], octets[16];
  for (int i = 0; i < 8; ++i) {  // interleave rows 2i, 2i+1
    pairs[2 * i] = low_pairs(rows[2 * i], rows[2 * i + 1]);
    pairs[2 * i + 1] = high_pairs(rows[2 * i], rows[2 * i + 1]);
  }
  for (int i = 0; i < 4; ++i) {  // then pairs of those: 4 rows per 128-bit lane
    const __m512 *a = pairs + 4 * i, *b = pairs + 4 * i + 2;
    quads[4 * i] = low_quads(a[0], b[0]);
    quads[4 * i + 1] = high_quads(a[0], b[0]);
    quads[4 * i + 2] = low_quads(a[1], b[1]);
    quads[4 * i + 3] = high_quads(a[1], b[1]);
  }
  for (int i = 0; i < 2; ++i)  // then 128-bit lanes across 8 rows
    for (int k = 0; k < 4; ++k) {
      octets[8 * i + k] = lanes_of<0x88>(quads[8 * i + k], quads[8 * i + 4 + k]);
      octets[8 * i + 4 + k] = lanes_of<0xdd>(quads[8 * i + k], quads[8 * i + 4 + k]);
    }
  for (int k = 0; k < 8; ++k) {  // and across all 16
    rows[k] = lanes_of<0x88>(octets[k], octets[8 + k]);
    rows[8 + k] = lanes_of<0xdd>(octets[k], octets[8 + k]);
  }
}

inline __mmask16 first(std::size_t count) { return static_cast<__mmask16>((1u << count) - 1u); }

/// 16 channels of `count` pixels in hpf's layout as 16-channel vectors, one per pixel.
inline void load_pixels(const float* const channel[16], std::size_t channels, std::size_t at, std::size_t count,
                        __m512 pixels[16]) {
  const __mmask16 mask = first(count);
  for (std::size_t c = 0; c < 16; ++c)
    pixels[c] = c < channels ? _mm512_maskz_loadu_ps(mask, channel[c] + at) : _mm512_setzero_ps();
  transpose(pixels);
}

// The first lanes of a vector, as `lanes` selects them. A masked store only where some lanes stay
// (masked stores of every lane cost AMD's Zen some 5 % of a bf16 ResNet-20 step).
inline void store(float* to, __m512 v, __mmask16 lanes) {
  if (lanes == 0xffff) {
    _mm512_storeu_ps(to, v);
  } else {
    _mm512_mask_storeu_ps(to, lanes, v);
  }
}
#if HPF_CHANNEL_BLOCKS_BF16
// Rounds to nearest even as oneDNN's reorders do on this instruction (subnormals to zero).
inline void store(bf16_bits* to, __m512 v, __mmask16 lanes) {
  const __m256bh rounded = _mm512_cvtneps_pbh(v);
  __m256i bits;
  std::memcpy(&bits, &rounded, sizeof bits);
  if (lanes == 0xffff) {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(to), bits);
  } else {
    _mm256_mask_storeu_epi16(to, lanes, bits);
  }
}
#endif

/// Runs move(image, block) for every image and channel block; where hpf is compiled with OpenMP,
/// on its threads (oneDNN's reorders, which these moves replace, run on them too).
template <class Move>
void for_each_channel_block(const ChannelBlocks& b, const Move& move) {
  const std::size_t pieces = b.images * b.channel_blocks();
#if defined(_OPENMP)
#pragma omp parallel for if (pieces > 1)
#endif
  for (std::size_t piece = 0; piece < pieces; ++piece) move(piece / b.channel_blocks(), piece % b.channel_blocks());
}

}  // namespace channel_blocks_detail

/// hpf's `from` into `to`, the other layout (float or, where channel_blocks_available, bf16 bits).
template <class T>
void to_channel_blocks(const ChannelBlocks& b, const float* from, T* to) {
  static_assert(channel_blocks_available<T>(), "to_channel_blocks: not compiled for this element type on this target");
  namespace cb = channel_blocks_detail;
  cb::for_each_channel_block(b, [&](std::size_t image, std::size_t block) {
    const std::size_t first_channel = block * ChannelBlocks::block, channels = b.channels_in(block);
    const float* channel[16] = {};
    for (std::size_t c = 0; c < channels; ++c) channel[c] = from + (first_channel + c) * b.channel_stride + image * b.spatial;
    T* out = to + b.start(image, block);
    const std::size_t stride = b.pixel_stride();
    const __mmask16 stored = cb::first(b.stored(block));
    for (std::size_t at = 0; at < b.spatial; at += 16) {
      const std::size_t count = std::min<std::size_t>(16, b.spatial - at);
      __m512 pixels[16];
      cb::load_pixels(channel, channels, at, count, pixels);
      for (std::size_t p = 0; p < count; ++p) cb::store(out + (at + p) * stride, pixels[p], stored);
    }
  });
}

/// `from`, the other layout, into hpf's `to` (float; the blocks' padding channels are not read).
inline void from_channel_blocks(const ChannelBlocks& b, const float* from, float* to) {
  namespace cb = channel_blocks_detail;
  cb::for_each_channel_block(b, [&](std::size_t image, std::size_t block) {
    const std::size_t first_channel = block * ChannelBlocks::block, channels = b.channels_in(block);
    const float* in = from + b.start(image, block);
    float* channel = to + first_channel * b.channel_stride + image * b.spatial;
    const std::size_t stride = b.pixel_stride();
    const __mmask16 stored = cb::first(b.stored(block));  // channels last: only the real ones
    for (std::size_t at = 0; at < b.spatial; at += 16) {
      const std::size_t count = std::min<std::size_t>(16, b.spatial - at);
      __m512 rows[16];
      for (std::size_t p = 0; p < 16; ++p)
        rows[p] = p < count ? _mm512_maskz_loadu_ps(stored, in + (at + p) * stride) : _mm512_setzero_ps();
      cb::transpose(rows);
      for (std::size_t c = 0; c < channels; ++c) cb::store(channel + c * b.channel_stride + at, rows[c], cb::first(count));
    }
  });
}
#endif  // HPF_CHANNEL_BLOCKS

}  // namespace hpf::detail

#endif  // HPF_LAYERS_DETAIL_CHANNEL_BLOCKS_HPP
