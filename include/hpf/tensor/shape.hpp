// SPDX-License-Identifier: MIT
#ifndef HPF_TENSOR_SHAPE_HPP
#define HPF_TENSOR_SHAPE_HPP

#include <array>
#include <cstddef>
#include <string>
#include <type_traits>

namespace hpf {

/// \brief The compile-time shape of one sample (the batch dimension is a run-time value and is
/// never part of a Shape). `Shape<F>` is a vector of F features, `Shape<T, D>` a sequence of T
/// positions with D features each (a transformer's tokens), `Shape<C, H, W>` an image with C
/// channels, `Shape<C, D, H, W>` a volume (a 3-D field of C channels).
///
/// In memory a batch is `[channels][N][spatial]` (see Activation): channels are an image's C and
/// a sequence's D, spatial its H*W (D*H*W) and T. A sequence's features are its channels, so a layer
/// applied per position (Dense, LayerNorm) treats the batch's N*T positions as N*T samples.
/// \tparam Dims the extents in PyTorch's order (CHW, CDHW; T, D as batch_first sequences)
template <std::size_t... Dims>
struct Shape {
  static_assert(sizeof...(Dims) >= 1 && sizeof...(Dims) <= 4,
                "hpf::Shape: a sample shape has 1 (features), 2 (positions, features), 3 (channels, height, "
                "width) or 4 (channels, depth, height, width) extents");
  static_assert(((Dims > 0) && ...), "hpf::Shape: every extent must be positive");

  static constexpr bool valid = true;
  static constexpr std::size_t rank = sizeof...(Dims);
  static constexpr std::array<std::size_t, rank> dims{Dims...};
  /// Elements per sample.
  static constexpr std::size_t size = (Dims * ...);
  /// A sequence: positions x features.
  static constexpr bool sequence = rank == 2;
  /// Channels of an image, features of a vector or of a sequence's positions (the outer extent
  /// of the activation layout).
  static constexpr std::size_t channels = sequence ? dims[rank - 1] : dims[0];
  /// Elements per channel (H*W for images, D*H*W for volumes, T for sequences, 1 for vectors).
  static constexpr std::size_t spatial = size / channels;
  static constexpr std::size_t depth = rank == 4 ? dims[1] : 1;
  static constexpr std::size_t height = rank >= 3 ? dims[rank - 2] : 1;
  static constexpr std::size_t width = rank >= 3 ? dims[rank - 1] : 1;
  /// Positions of a sequence (1 otherwise).
  static constexpr std::size_t positions = sequence ? dims[0] : 1;
};

/// What a layer outputs when it rejects its input: later layers pass it on silently, so a model
/// with one mistake produces one error (at the layer that made it), not a cascade.
struct InvalidShape {
  static constexpr bool valid = false;
  static constexpr std::size_t rank = 0;
  static constexpr std::array<std::size_t, 0> dims{};
  static constexpr bool sequence = false;
  static constexpr std::size_t size = 0, channels = 0, spatial = 0, depth = 0, height = 0, width = 0, positions = 0;
};

/// "64x8x8" for Shape<64, 8, 8>: used by the model summary and error messages at run time.
template <class S>
std::string shape_string() {
  if constexpr (!S::valid) {
    return "invalid";
  } else {
    std::string s;
    for (std::size_t i = 0; i < S::rank; ++i) {
      if (i) s += 'x';
      s += std::to_string(S::dims[i]);
    }
    if constexpr (requires { typename S::whole; }) {  // a SpatialPart: the slabs it holds
      s += " (";
      s += std::to_string(S::held);
      s += " of ";
      s += std::to_string(S::group);
      s += " slabs of ";
      s += shape_string<typename S::whole>();
      s += ')';
    }
    return s;
  }
}

}  // namespace hpf

#endif  // HPF_TENSOR_SHAPE_HPP
