// Conv2D<8, 3, Stride<0>>: a zero stride.
// expect-message: hpf::Conv2D: Stride<S> must be positive
// expect-early: Stride<0>
// expect-early: Conv2D<8, 3, hpf::Stride<0> ?>
#include <hpf/layers/conv2d.hpp>
#include <hpf/layers/flatten.hpp>
#include <hpf/model/sequential.hpp>

using Model = hpf::Sequential<hpf::Input<1, 8, 8>, hpf::Conv2D<8, 3, hpf::Stride<0>>, hpf::Flatten>;

static_assert(Model::valid);

int main() {}
