// SPDX-License-Identifier: MIT
#ifndef HPF_ZOO_BLOCKS_HPP
#define HPF_ZOO_BLOCKS_HPP

#include <hpf/layers/batch_norm.hpp>
#include <hpf/layers/conv2d.hpp>
#include <hpf/layers/identity.hpp>
#include <hpf/layers/options.hpp>
#include <hpf/layers/relu.hpp>
#include <hpf/layers/subsample_zero_pad.hpp>
#include <hpf/model/chain.hpp>
#include <hpf/model/residual.hpp>

#include <cstddef>
#include <type_traits>

namespace hpf::zoo {

/// How a CIFAR ResNet block changes width and resolution on its shortcut (He et al. 2016).
enum class Shortcut {
  /// Option A: subsample and zero-pad channels, no parameters.
  zero_pad,
  /// Option B: 1x1 convolution + BatchNorm projection.
  projection,
};

namespace detail {
template <std::size_t Channels, std::size_t Step, bool SameShape, Shortcut Kind>
struct basic_shortcut {
  using type = std::conditional_t<Kind == Shortcut::zero_pad, SubsampleZeroPad<Channels, Step>,
                                  Chain<Conv2D<Channels, 1, hpf::Stride<Step>, NoBias>, BatchNorm>>;
};
template <std::size_t Channels, std::size_t Step, Shortcut Kind>
struct basic_shortcut<Channels, Step, true, Kind> {
  using type = Identity;
};
}  // namespace detail

/// \brief The CIFAR ResNet basic block: relu(bn(conv3x3(relu(bn(conv3x3_s(x))))) + shortcut(x)).
/// \tparam Channels output channels
/// \tparam Step stride of the first convolution (2 where a stage halves the resolution)
/// \tparam SameShape true if input and output shapes agree (identity shortcut)
/// \tparam Kind the shortcut used otherwise
template <std::size_t Channels, std::size_t Step = 1, bool SameShape = true, Shortcut Kind = Shortcut::zero_pad>
using BasicBlock =
    Chain<Residual<Chain<Conv2D<Channels, 3, hpf::Stride<Step>, Pad<1>, NoBias>, BatchNorm, ReLU,
                         Conv2D<Channels, 3, Pad<1>, NoBias>, BatchNorm>,
                   typename detail::basic_shortcut<Channels, Step, SameShape, Kind>::type>,
          ReLU>;

/// \brief Pre-activation bottleneck (He et al., Identity Mappings, 2016) that keeps its shape:
/// x + conv1x1(relu(bn(conv3x3(relu(bn(conv1x1(relu(bn(x))))))))).
template <std::size_t Width, std::size_t Out>
using PreActBottleneck =
    Residual<Chain<BatchNorm, ReLU, Conv2D<Width, 1, NoBias>, BatchNorm, ReLU, Conv2D<Width, 3, Pad<1>, NoBias>,
                   BatchNorm, ReLU, Conv2D<Out, 1, NoBias>>>;

/// \brief Pre-activation bottleneck that changes width and/or resolution: the BN-ReLU
/// pre-activation is shared by both paths, and the shortcut is a 1x1 projection of it.
template <std::size_t Width, std::size_t Out, std::size_t Step>
using PreActBottleneckProjection =
    Chain<BatchNorm, ReLU,
          Residual<Chain<Conv2D<Width, 1, NoBias>, BatchNorm, ReLU, Conv2D<Width, 3, hpf::Stride<Step>, Pad<1>, NoBias>,
                         BatchNorm, ReLU, Conv2D<Out, 1, NoBias>>,
                   Chain<Conv2D<Out, 1, hpf::Stride<Step>, NoBias>>>>;

}  // namespace hpf::zoo

#endif  // HPF_ZOO_BLOCKS_HPP
