// A residual block whose body halves the image and doubles the channels while the identity
// shortcut keeps Shape<16, 32, 32>: the body ends in Shape<32, 16, 16>. The block is layer 1.
// expect-message: hpf::Residual: the body and the shortcut produce different shapes
// expect-early: residual_paths_disagree<hpf::Shape<32, 16, 16>, hpf::Shape<16, 32, 32> ?>
// expect-index: 1
#include <hpf/layers/batch_norm.hpp>
#include <hpf/layers/conv2d.hpp>
#include <hpf/layers/global_avg_pool.hpp>
#include <hpf/layers/dense.hpp>
#include <hpf/layers/relu.hpp>
#include <hpf/layers/softmax_cross_entropy.hpp>
#include <hpf/model/chain.hpp>
#include <hpf/model/network.hpp>
#include <hpf/model/residual.hpp>
#include <hpf/model/sequential.hpp>

using Body = hpf::Chain<hpf::Conv2D<32, 3, hpf::Stride<2>, hpf::Pad<1>, hpf::NoBias>, hpf::BatchNorm, hpf::ReLU,
                        hpf::Conv2D<32, 3, hpf::Pad<1>, hpf::NoBias>, hpf::BatchNorm>;
using Model = hpf::Sequential<hpf::Input<16, 32, 32>, hpf::ReLU, hpf::Residual<Body>, hpf::ReLU, hpf::GlobalAvgPool,
                              hpf::Dense<10>, hpf::SoftmaxCrossEntropy>;

int main() {
  hpf::Network<Model> net;
  (void)net;
}
