// SoftmaxCrossEntropy on an image (GlobalAvgPool and Dense forgotten): layer 3 gets Shape<16, 8, 8>.
// expect-message: hpf::SoftmaxCrossEntropy: the input must be a vector
// expect-early: SoftmaxCrossEntropy
// expect-early: Shape<16, 8, 8>
// expect-index: 3
#include <hpf/layers/batch_norm.hpp>
#include <hpf/layers/conv2d.hpp>
#include <hpf/layers/relu.hpp>
#include <hpf/layers/softmax_cross_entropy.hpp>
#include <hpf/model/network.hpp>
#include <hpf/model/sequential.hpp>

using Model = hpf::Sequential<hpf::Input<3, 8, 8>, hpf::Conv2D<16, 3, hpf::Pad<1>>, hpf::BatchNorm, hpf::ReLU,
                              hpf::SoftmaxCrossEntropy>;

int main() {
  hpf::Network<Model> net;
  auto tape = net.make_tape(4);
  net.forward(tape, 4);
}
