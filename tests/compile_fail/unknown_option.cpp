// Conv2D<8, 3, int>: an option that is none of Stride<S>, Pad<P>, NoBias.
// expect-message: hpf: unknown layer option
// expect-early: Conv2D<8, 3, int>
// expect-early: check_spatial_options<int>
#include <hpf/layers/conv2d.hpp>
#include <hpf/layers/flatten.hpp>
#include <hpf/model/sequential.hpp>

using Model = hpf::Sequential<hpf::Input<1, 8, 8>, hpf::Conv2D<8, 3, int>, hpf::Flatten>;

static_assert(Model::valid);

int main() {}
