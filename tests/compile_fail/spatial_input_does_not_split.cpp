// Spatial<4> of 10-row images: the rows do not divide into 4 slabs.
// expect-message: hpf::Spatial<G>: the model's input must be an image or a volume whose height \(depth for a volume\) divides into G slabs
// expect-early: Shape<1, 10, 10>
#include <hpf/hpf.hpp>

using Model = hpf::Sequential<hpf::Input<1, 10, 10>, hpf::Conv2D<4, 3, hpf::Pad<1>>, hpf::ReLU, hpf::Flatten, hpf::Dense<10>,
                              hpf::SoftmaxCrossEntropy>;

void train(const hpf::comm::Communicator& world) {
  hpf::fit<Model, hpf::Pipeline<hpf::Cuts<>, hpf::Spatial<4>>>(world, hpf::TrainOptions{}, hpf::DataSource{});
}

int main() {}
