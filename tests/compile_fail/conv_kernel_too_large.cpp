// A 7x7 kernel on a 3x3 image padded by 1 (5x5): layer 1 gets Shape<4, 3, 3>.
// expect-message: hpf::Conv2D: the kernel is larger than the padded input image
// expect-early: Conv2D<8, 7
// expect-early: Shape<4, 3, 3>
// expect-index: 1
#include <hpf/layers/conv2d.hpp>
#include <hpf/layers/flatten.hpp>
#include <hpf/model/sequential.hpp>

using Model = hpf::Sequential<hpf::Input<2, 6, 6>, hpf::Conv2D<4, 3, hpf::Stride<2>, hpf::Pad<1>>,
                              hpf::Conv2D<8, 7, hpf::Pad<1>>, hpf::Flatten>;

int main() { return static_cast<int>(Model::output_shape::size); }
