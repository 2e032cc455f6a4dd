// A 4x4x4 pooling window on a volume 3 voxels wide: layer 1 gets Shape<4, 8, 8, 3>.
// expect-message: hpf::MaxPool3D/AvgPool3D: the window is larger than the padded input volume
// expect-early: MaxPool3D<4>
// expect-early: Shape<4, 8, 8, 3>
// expect-index: 1
#include <hpf/layers/conv3d.hpp>
#include <hpf/layers/max_pool3d.hpp>
#include <hpf/layers/relu.hpp>
#include <hpf/model/network.hpp>
#include <hpf/model/sequential.hpp>

using Model = hpf::Sequential<hpf::Input<2, 8, 8, 3>, hpf::Conv3D<4, 3, hpf::Pad<1>>, hpf::MaxPool3D<4>, hpf::ReLU>;

int main() {
  hpf::Network<Model> net;
  (void)net;
}
