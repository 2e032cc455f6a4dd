// Under Spatial<2> a 3x3 convolution without padding (12 rows -> 10) does not map each slab's
// rows to its own output rows: layer 1 gets the slabs of Shape<4, 12, 12>.
// expect-message: hpf::Spatial<G>: this convolution does not split into the input's slabs of rows
// expect-early: Conv2D<6, 3>
// expect-early: Shape<4, 12, 12>
// expect-index: 1
#include <hpf/layers/conv2d.hpp>
#include <hpf/layers/flatten.hpp>
#include <hpf/layers/relu.hpp>
#include <hpf/layers/softmax_cross_entropy.hpp>
#include <hpf/layers/dense.hpp>
#include <hpf/model/network.hpp>
#include <hpf/model/sequential.hpp>
#include <hpf/model/spatial_split.hpp>

using Model = hpf::Sequential<hpf::Input<1, 12, 12>, hpf::Conv2D<4, 3, hpf::Pad<1>>, hpf::Conv2D<6, 3>, hpf::ReLU,
                              hpf::Flatten, hpf::Dense<10>, hpf::SoftmaxCrossEntropy>;

int main() {
  hpf::Network<hpf::SpatialSplit<Model, 2>> net;
  (void)net;
}
