// A layer split of a model without Dense or convolution layers.
// expect-message: hpf::fit: the strategy's layer split \(Filter<G> or Channel<G>\) divides Dense, Conv2D and Conv3D layers, and the model has none
#include <hpf/hpf.hpp>

using Elementwise = hpf::Sequential<hpf::Input<10>, hpf::ReLU, hpf::SoftmaxCrossEntropy>;

void train(const hpf::comm::Communicator& world) {
  hpf::fit<Elementwise, hpf::Pipeline<hpf::Cuts<>, hpf::Filter<2>>>(world, hpf::TrainOptions{}, hpf::DataSource{});
}

int main() {}
