// SPDX-License-Identifier: MIT
#ifndef HPF_ZOO_MODELS_HPP
#define HPF_ZOO_MODELS_HPP

#include <hpf/layers/batch_norm.hpp>
#include <hpf/layers/conv2d.hpp>
#include <hpf/layers/dense.hpp>
#include <hpf/layers/flatten.hpp>
#include <hpf/layers/global_avg_pool.hpp>
#include <hpf/layers/max_pool.hpp>
#include <hpf/layers/relu.hpp>
#include <hpf/layers/softmax_cross_entropy.hpp>
#include <hpf/model/dense_pair.hpp>
#include <hpf/model/repeat.hpp>
#include <hpf/model/sequential.hpp>
#include <hpf/zoo/blocks.hpp>

#include <cstddef>

/// Ready-made models: the ones hpf is measured with (benchmarks/RESULTS.md), written exactly as
/// a user would write their own.
namespace hpf::zoo {

/// 784-512-512-10 multilayer perceptron for 28x28 grey images (Fashion-MNIST).
using Mlp = Sequential<Input<1, 28, 28>, Flatten, Dense<512>, ReLU, Dense<512>, ReLU, Dense<10>, SoftmaxCrossEntropy>;

/// The same MLP with its hidden layers as a DensePair: under a filter or channel split they run as
/// Megatron's column- and row-parallel pair, one sum over the group per pass for both.
using MlpPairs = Sequential<Input<1, 28, 28>, Flatten, DensePair<Dense<512>, ReLU, Dense<512>>, ReLU, Dense<10>,
                            SoftmaxCrossEntropy>;

/// conv32-pool-conv64-pool-fc128-fc10 for 28x28 grey images (Fashion-MNIST).
using Cnn = Sequential<Input<1, 28, 28>, Conv2D<32, 3, Pad<1>>, ReLU, MaxPool<2>, Conv2D<64, 3, Pad<1>>, ReLU,
                       MaxPool<2>, Flatten, Dense<128>, ReLU, Dense<10>, SoftmaxCrossEntropy>;

/// \brief CIFAR ResNet of depth 6n + 2 (ResNet-20: n = 3, ResNet-56: n = 9) on 3x32x32 images:
/// conv3x3-16, three stages of n basic blocks at 16/32/64 channels, global average pooling, fc.
template <std::size_t Depth, std::size_t Classes = 10, Shortcut Kind = Shortcut::zero_pad>
struct cifar_resnet {
  static_assert((Depth - 2) % 6 == 0 && Depth >= 14, "hpf::zoo::CifarResNet: depth must be 6n + 2 with n >= 2");
  static constexpr std::size_t n = (Depth - 2) / 6;
  using type = Sequential<Input<3, 32, 32>, Conv2D<16, 3, Pad<1>, NoBias>, BatchNorm, ReLU,  //
                          Repeat<n, BasicBlock<16>>,                                          //
                          BasicBlock<32, 2, false, Kind>, Repeat<n - 1, BasicBlock<32>>,   //
                          BasicBlock<64, 2, false, Kind>, Repeat<n - 1, BasicBlock<64>>,   //
                          GlobalAvgPool, Dense<Classes>, SoftmaxCrossEntropy>;
};
template <std::size_t Depth, std::size_t Classes = 10, Shortcut Kind = Shortcut::zero_pad>
using CifarResNet = typename cifar_resnet<Depth, Classes, Kind>::type;

using ResNet20 = CifarResNet<20>;
using ResNet56 = CifarResNet<56>;

/// \brief Pre-activation bottleneck ResNet of depth 9n + 2 (ResNet-164: n = 18, ResNet-1001:
/// n = 111) on 3x32x32 images: conv3x3-16, three stages of n bottlenecks with 64/128/256 outputs
/// (widths 16/32/64, stride on the 3x3), then BN-ReLU, global average pooling and fc.
template <std::size_t Depth, std::size_t Classes = 10>
struct preact_resnet {
  static_assert((Depth - 2) % 9 == 0 && Depth >= 20, "hpf::zoo::PreActResNet: depth must be 9n + 2 with n >= 2");
  static constexpr std::size_t n = (Depth - 2) / 9;
  using type = Sequential<Input<3, 32, 32>, Conv2D<16, 3, Pad<1>, NoBias>,                            //
                          PreActBottleneckProjection<16, 64, 1>, Repeat<n - 1, PreActBottleneck<16, 64>>,    //
                          PreActBottleneckProjection<32, 128, 2>, Repeat<n - 1, PreActBottleneck<32, 128>>,  //
                          PreActBottleneckProjection<64, 256, 2>, Repeat<n - 1, PreActBottleneck<64, 256>>,  //
                          BatchNorm, ReLU, GlobalAvgPool, Dense<Classes>, SoftmaxCrossEntropy>;
};
template <std::size_t Depth, std::size_t Classes = 10>
using PreActResNet = typename preact_resnet<Depth, Classes>::type;

using PreActResNet164 = PreActResNet<164>;
using PreActResNet1001 = PreActResNet<1001>;

}  // namespace hpf::zoo

#endif  // HPF_ZOO_MODELS_HPP
