// Conv2D after Flatten: layer 2 gets the vector Shape<784>.
// expect-message: hpf::Conv2D: the input must be an image
// expect-early: Conv2D<8, 3
// expect-early: Shape<784>
// expect-index: 2
#include <hpf/layers/conv2d.hpp>
#include <hpf/layers/dense.hpp>
#include <hpf/layers/flatten.hpp>
#include <hpf/layers/relu.hpp>
#include <hpf/layers/softmax_cross_entropy.hpp>
#include <hpf/model/sequential.hpp>

using Model = hpf::Sequential<hpf::Input<1, 28, 28>, hpf::ReLU, hpf::Flatten, hpf::Conv2D<8, 3>, hpf::Dense<10>,
                              hpf::SoftmaxCrossEntropy>;

static_assert(Model::valid);

int main() {}
