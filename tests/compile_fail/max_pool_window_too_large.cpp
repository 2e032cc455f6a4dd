// A 4x4 pooling window on a 3x3 image: layer 1 gets Shape<8, 3, 3>.
// expect-message: hpf::MaxPool/AvgPool: the window is larger than the padded input image
// expect-early: MaxPool<4>
// expect-early: Shape<8, 3, 3>
// expect-index: 1
#include <hpf/layers/conv2d.hpp>
#include <hpf/layers/max_pool.hpp>
#include <hpf/layers/relu.hpp>
#include <hpf/model/network.hpp>
#include <hpf/model/sequential.hpp>

using Model = hpf::Sequential<hpf::Input<3, 3, 3>, hpf::Conv2D<8, 3, hpf::Pad<1>>, hpf::MaxPool<4>, hpf::ReLU>;

int main() {
  hpf::Network<Model> net;
  (void)net;
}
