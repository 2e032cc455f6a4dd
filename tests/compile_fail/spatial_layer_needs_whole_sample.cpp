// Under Spatial<2> a Dropout (whose masks follow each element's place in the whole sample) at
// layer 2 gets a slab of rows: layers before the gather must take slabs.
// expect-message: hpf::Spatial<G>: the layer named above cannot take samples split into slabs of rows
// expect-early: Dropout
// expect-index: 2
#include <hpf/layers/conv2d.hpp>
#include <hpf/layers/dense.hpp>
#include <hpf/layers/dropout.hpp>
#include <hpf/layers/flatten.hpp>
#include <hpf/layers/relu.hpp>
#include <hpf/layers/softmax_cross_entropy.hpp>
#include <hpf/model/network.hpp>
#include <hpf/model/sequential.hpp>
#include <hpf/model/spatial_split.hpp>

using Model = hpf::Sequential<hpf::Input<1, 8, 8>, hpf::Conv2D<4, 3, hpf::Pad<1>>, hpf::ReLU, hpf::Dropout<50>,
                              hpf::Flatten, hpf::Dense<10>, hpf::SoftmaxCrossEntropy>;

int main() {
  hpf::Network<hpf::SpatialSplit<Model, 2>> net;
  (void)net;
}
