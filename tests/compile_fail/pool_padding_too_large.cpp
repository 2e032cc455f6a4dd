// MaxPool<2, Pad<2>>: padding larger than half the window (PyTorch rejects it too). Layer 2.
// expect-message: hpf::MaxPool/AvgPool: padding may be at most half the window
// expect-early: MaxPool<2, hpf::Pad<2> ?>
// expect-early: Shape<4, 16, 16>
// expect-index: 2
#include <hpf/layers/conv2d.hpp>
#include <hpf/layers/max_pool.hpp>
#include <hpf/layers/relu.hpp>
#include <hpf/model/sequential.hpp>

using Model = hpf::Sequential<hpf::Input<1, 16, 16>, hpf::Conv2D<4, 3, hpf::Pad<1>>, hpf::ReLU,
                              hpf::MaxPool<2, hpf::Pad<2>>>;

using Out = Model::output_shape;

int main() { return static_cast<int>(Out::size); }
