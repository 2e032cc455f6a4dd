// Under Spatial<4> 2x2 pooling of 12 rows gives slabs of 3 rows, which a stride of 2 does not
// divide: a window would read two members' rows. Layer 1 gets the slabs of Shape<4, 12, 12>.
// expect-message: hpf::Spatial<G>: MaxPool/AvgPool on samples split into slabs of rows needs windows inside a slab
// expect-early: MaxPool<2>
// expect-early: Shape<4, 12, 12>
// expect-index: 1
#include <hpf/layers/conv2d.hpp>
#include <hpf/layers/dense.hpp>
#include <hpf/layers/flatten.hpp>
#include <hpf/layers/max_pool.hpp>
#include <hpf/layers/relu.hpp>
#include <hpf/layers/softmax_cross_entropy.hpp>
#include <hpf/model/network.hpp>
#include <hpf/model/sequential.hpp>
#include <hpf/model/spatial_split.hpp>

using Model = hpf::Sequential<hpf::Input<1, 12, 12>, hpf::Conv2D<4, 3, hpf::Pad<1>>, hpf::MaxPool<2>, hpf::ReLU,
                              hpf::Flatten, hpf::Dense<10>, hpf::SoftmaxCrossEntropy>;

int main() {
  hpf::Network<hpf::SpatialSplit<Model, 4>> net;
  (void)net;
}
