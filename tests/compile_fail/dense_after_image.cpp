// Dense after image-shaped layers without Flatten: layer 4 gets Shape<32, 7, 7>.
// expect-message: hpf::Dense: the input must be a vector Shape<F> or a sequence
// expect-message: hpf::Network: the model is invalid; the first error above names the layer
// expect-early: Dense<10>
// expect-early: Shape<32, 7, 7>
// expect-index: 4
#include <hpf/layers/conv2d.hpp>
#include <hpf/layers/dense.hpp>
#include <hpf/layers/max_pool.hpp>
#include <hpf/layers/relu.hpp>
#include <hpf/layers/softmax_cross_entropy.hpp>
#include <hpf/model/network.hpp>
#include <hpf/model/sequential.hpp>

using Model = hpf::Sequential<hpf::Input<1, 28, 28>, hpf::Conv2D<32, 3, hpf::Pad<1>>, hpf::ReLU, hpf::MaxPool<2>,
                              hpf::MaxPool<2>, hpf::Dense<10>, hpf::SoftmaxCrossEntropy>;

int main() {
  hpf::Network<Model> net;
  (void)net;
}
