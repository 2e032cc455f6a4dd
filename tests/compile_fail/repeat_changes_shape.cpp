// A repeated block that maps 8 channels to 16: its output cannot feed its next copy. Layer 1.
// expect-message: hpf::Repeat: a repeated block must keep the shape of its input
// expect-early: repeated_block_changes_shape<hpf::Shape<8, 16, 16>, hpf::Shape<16, 16, 16> ?>
// expect-index: 1
#include <hpf/layers/batch_norm.hpp>
#include <hpf/layers/conv2d.hpp>
#include <hpf/layers/relu.hpp>
#include <hpf/model/chain.hpp>
#include <hpf/model/repeat.hpp>
#include <hpf/model/sequential.hpp>

using Model = hpf::Sequential<hpf::Input<3, 16, 16>, hpf::Conv2D<8, 3, hpf::Pad<1>>,
                              hpf::Repeat<4, hpf::Chain<hpf::Conv2D<16, 3, hpf::Pad<1>>, hpf::BatchNorm, hpf::ReLU>>>;

using Out = Model::output_shape;

int main() { return static_cast<int>(Out::size); }
