// A mistake three levels down: layer 4 of the model is Repeat<3, Block>, Block is a residual block,
// and position 3 of the residual body (MaxPool<16>) gets Shape<16, 8, 8>. The diagnostic must show
// both positions (I = 3 in the body, I = 4 in the model), the layer and the shape.
// expect-message: hpf::MaxPool/AvgPool: the window is larger than the padded input image
// expect-early: MaxPool<16>
// expect-early: Shape<16, 8, 8>
// expect-index: 3
// expect-index: 4
// expect-lines: 16
#include <hpf/layers/batch_norm.hpp>
#include <hpf/layers/conv2d.hpp>
#include <hpf/layers/dense.hpp>
#include <hpf/layers/global_avg_pool.hpp>
#include <hpf/layers/max_pool.hpp>
#include <hpf/layers/relu.hpp>
#include <hpf/layers/softmax_cross_entropy.hpp>
#include <hpf/model/chain.hpp>
#include <hpf/model/network.hpp>
#include <hpf/model/repeat.hpp>
#include <hpf/model/residual.hpp>
#include <hpf/model/sequential.hpp>

using Block = hpf::Residual<hpf::Chain<hpf::BatchNorm, hpf::ReLU, hpf::Conv2D<16, 3, hpf::Pad<1>, hpf::NoBias>,
                                       hpf::MaxPool<16>, hpf::Conv2D<16, 3, hpf::Pad<1>, hpf::NoBias>>>;
using Model = hpf::Sequential<hpf::Input<3, 8, 8>, hpf::Conv2D<16, 3, hpf::Pad<1>>, hpf::BatchNorm, hpf::ReLU,
                              hpf::Conv2D<16, 1>, hpf::Repeat<3, Block>, hpf::GlobalAvgPool, hpf::Dense<10>, hpf::SoftmaxCrossEntropy>;

int main() {
  hpf::Network<Model> net;
  (void)net;
}
