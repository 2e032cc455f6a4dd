// Dense<10, Pad<1>>: padding is not an option of a dense layer.
// expect-message: hpf::Dense: the only option is hpf::NoBias
// expect-early: Dense<10, hpf::Pad<1> ?>
#include <hpf/layers/dense.hpp>
#include <hpf/layers/flatten.hpp>
#include <hpf/layers/softmax_cross_entropy.hpp>
#include <hpf/model/sequential.hpp>

using Model = hpf::Sequential<hpf::Input<1, 28, 28>, hpf::Flatten, hpf::Dense<10, hpf::Pad<1>>, hpf::SoftmaxCrossEntropy>;

static_assert(Model::valid);

int main() {}
