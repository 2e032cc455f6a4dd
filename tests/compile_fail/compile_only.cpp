// SPDX-License-Identifier: MIT
// Compile-only test (built, never run): the shapes and costs hpf infers for valid models.
// Expected values are counted by hand from the layer definitions (PyTorch's conventions).
#include <hpf/layers/batch_norm.hpp>
#include <hpf/layers/conv2d.hpp>
#include <hpf/layers/dense.hpp>
#include <hpf/layers/flatten.hpp>
#include <hpf/layers/global_avg_pool.hpp>
#include <hpf/layers/max_pool.hpp>
#include <hpf/layers/relu.hpp>
#include <hpf/layers/softmax_cross_entropy.hpp>
#include <hpf/meta/type_list.hpp>
#include <hpf/model/chain.hpp>
#include <hpf/model/repeat.hpp>
#include <hpf/model/residual.hpp>
#include <hpf/model/sequential.hpp>
#include <hpf/tensor/shape.hpp>
#include <hpf/zoo/blocks.hpp>
#include <hpf/zoo/models.hpp>

#include <cstddef>
#include <type_traits>

namespace {

using hpf::Shape;
template <class Model, std::size_t I>
using output_at = typename hpf::at_t<typename Model::bound_layers, I>::output_shape;
template <class Model, std::size_t I>
constexpr hpf::LayerCost cost_at = hpf::at_t<typename Model::bound_layers, I>::cost;

// Shapes through the Cnn: conv 3x3 pad 1 keeps 28x28, each 2x2 pool halves it.
using Cnn = hpf::zoo::Cnn;
static_assert(std::is_same_v<Cnn::input_shape, Shape<1, 28, 28>>);
static_assert(std::is_same_v<output_at<Cnn, 0>, Shape<32, 28, 28>>);
static_assert(std::is_same_v<output_at<Cnn, 2>, Shape<32, 14, 14>>);
static_assert(std::is_same_v<output_at<Cnn, 3>, Shape<64, 14, 14>>);
static_assert(std::is_same_v<output_at<Cnn, 5>, Shape<64, 7, 7>>);
static_assert(std::is_same_v<output_at<Cnn, 6>, Shape<3136>>);
static_assert(std::is_same_v<output_at<Cnn, 7>, Shape<128>>);
static_assert(std::is_same_v<Cnn::output_shape, Shape<10>>);
static_assert(Cnn::size == 11 && Cnn::leaves == 11 && Cnn::valid && Cnn::trainable);
// Conv2D<32, 3> on 1 channel: 32*1*9 weights + 32 biases; 32*9 MACs per output pixel.
static_assert(cost_at<Cnn, 0>.parameters == 32 * 9 + 32);
static_assert(cost_at<Cnn, 0>.macs == 32 * 9 * 28 * 28);
static_assert(cost_at<Cnn, 2>.parameters == 0 && cost_at<Cnn, 2>.activations == 32 * 14 * 14);
// Dense<128> on 3136 features.
static_assert(cost_at<Cnn, 7>.parameters == 3136 * 128 + 128 && cost_at<Cnn, 7>.macs == 3136 * 128);
static_assert(Cnn::cost.parameters == 421'642);

// Mlp: 784 -> 512 -> 512 -> 10.
using Mlp = hpf::zoo::Mlp;
static_assert(std::is_same_v<output_at<Mlp, 0>, Shape<784>>);
static_assert(Mlp::size == 7 && Mlp::leaves == 7);
static_assert(Mlp::cost.parameters == (784 * 512 + 512) + (512 * 512 + 512) + (512 * 10 + 10));
static_assert(Mlp::cost.macs == 784 * 512 + 512 * 512 + 512 * 10);
static_assert(Mlp::layer_costs[1].parameters == 784 * 512 + 512);

// Flat models without a loss are valid but not trainable.
using Features = hpf::Sequential<hpf::Input<3, 32, 32>, hpf::Conv2D<8, 3, hpf::Stride<2>, hpf::Pad<1>, hpf::NoBias>,
                                 hpf::BatchNorm, hpf::ReLU, hpf::MaxPool<3, hpf::Stride<2>, hpf::Pad<1>>>;
static_assert(Features::valid && !Features::trainable);
static_assert(std::is_same_v<output_at<Features, 0>, Shape<8, 16, 16>>);  // (32 + 2 - 3) / 2 + 1
static_assert(std::is_same_v<Features::output_shape, Shape<8, 8, 8>>);    // (16 + 2 - 3) / 2 + 1
static_assert(cost_at<Features, 0>.parameters == 8 * 3 * 9);               // NoBias
static_assert(cost_at<Features, 1>.parameters == 2 * 8 && cost_at<Features, 1>.buffers == 2 * 8 + 1);  // + num_batches_tracked

// Residual and Repeat: shapes kept, costs add up, N copies cost N times one.
using Block = hpf::zoo::BasicBlock<16>;
using Stage = hpf::Sequential<hpf::Input<16, 32, 32>, hpf::Repeat<5, Block>>;
using One = hpf::Sequential<hpf::Input<16, 32, 32>, Block>;
static_assert(std::is_same_v<Stage::output_shape, Shape<16, 32, 32>>);
static_assert(Stage::cost == 5 * One::cost);
static_assert(Stage::leaves == 5 * One::leaves && One::leaves == 6);  // conv bn relu conv bn, relu
static_assert(One::cost.parameters == 2 * (16 * 16 * 9 + 2 * 16));
using Down = hpf::Sequential<hpf::Input<16, 32, 32>, hpf::zoo::BasicBlock<32, 2, false>>;
static_assert(std::is_same_v<Down::output_shape, Shape<32, 16, 16>>);
static_assert(Down::leaves == 7);  // + SubsampleZeroPad

// CIFAR ResNets (6n + 2): stem, three stages of n blocks, head.
using R20 = hpf::zoo::ResNet20;
static_assert(R20::size == 11);
static_assert(std::is_same_v<output_at<R20, 3>, Shape<16, 32, 32>>);
static_assert(std::is_same_v<output_at<R20, 5>, Shape<32, 16, 16>>);
static_assert(std::is_same_v<output_at<R20, 7>, Shape<64, 8, 8>>);
static_assert(std::is_same_v<output_at<R20, 8>, Shape<64>>);
static_assert(R20::leaves == 3 + 3 * 6 + 2 * (7 + 2 * 6) + 3);
static_assert(R20::cost.parameters == 269'722 && R20::cost.macs == 40'551'040);
static_assert(hpf::zoo::ResNet56::cost.parameters == 853'018);

// Pre-activation bottleneck ResNets (9n + 2): 27n + 9 leaves (stem conv; per stage a projection
// block of 10 and n - 1 bottlenecks of 9; head BN, ReLU, pool, dense, loss).
template <std::size_t Depth>
constexpr std::size_t preact_leaves = 27 * ((Depth - 2) / 9) + 9;
using P164 = hpf::zoo::PreActResNet164;
using P1001 = hpf::zoo::PreActResNet1001;
static_assert(P164::leaves == preact_leaves<164> && P1001::leaves == preact_leaves<1001> && P1001::leaves == 3006);
static_assert(P1001::size == 12 && P1001::trainable);
static_assert(std::is_same_v<output_at<P1001, 2>, Shape<64, 32, 32>>);
static_assert(std::is_same_v<output_at<P1001, 4>, Shape<128, 16, 16>>);
static_assert(std::is_same_v<output_at<P1001, 6>, Shape<256, 8, 8>>);
static_assert(std::is_same_v<P1001::output_shape, Shape<10>>);
static_assert(P164::cost.parameters == 1'703'258 && P1001::cost.parameters == 10'327'706);
static_assert(P1001::cost.macs == 1'490'995'712);
// Repeat<110, ...> costs 110 blocks.
static_assert(cost_at<P1001, 2> == 110 * hpf::Sequential<hpf::Input<64, 32, 32>, hpf::zoo::PreActBottleneck<16, 64>>::cost);
// The whole-model cost is the sum of the per-layer costs, except that the ReLU after the final
// BatchNorm (layer 8) writes over the BatchNorm's output: its activations are not counted twice.
constexpr hpf::LayerCost sum_of_layers() {
  hpf::LayerCost total{};
  for (const auto& c : P1001::layer_costs) total += c;
  return total;
}
constexpr hpf::LayerCost in_place_relu = P1001::layer_costs[8];
static_assert(in_place_relu.activations == 256 * 8 * 8);
static_assert(sum_of_layers().parameters == P1001::cost.parameters && sum_of_layers().macs == P1001::cost.macs &&
              sum_of_layers().forward_flops == P1001::cost.forward_flops &&
              sum_of_layers().activations == P1001::cost.activations + in_place_relu.activations);
// Depth does not change the shapes, only the Repeat counts (the type stays the same size).
static_assert(std::is_same_v<hpf::zoo::PreActResNet<4502>::output_shape, Shape<10>>);
static_assert(hpf::zoo::PreActResNet<4502>::leaves == preact_leaves<4502>);

}  // namespace
