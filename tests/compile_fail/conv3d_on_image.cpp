// A 3-D convolution after an image layer: layer 2 gets Shape<4, 16, 16>, an image, not a volume.
// expect-message: hpf::Conv3D: the input must be a volume Shape<C, D, H, W>
// expect-early: Conv3D<8, 3
// expect-early: Shape<4, 16, 16>
// expect-index: 2
#include <hpf/layers/conv2d.hpp>
#include <hpf/layers/conv3d.hpp>
#include <hpf/layers/relu.hpp>
#include <hpf/model/network.hpp>
#include <hpf/model/sequential.hpp>

using Model = hpf::Sequential<hpf::Input<1, 16, 16>, hpf::Conv2D<4, 3, hpf::Pad<1>>, hpf::ReLU, hpf::Conv3D<8, 3>>;

int main() {
  hpf::Network<Model> net;
  (void)net;
}
