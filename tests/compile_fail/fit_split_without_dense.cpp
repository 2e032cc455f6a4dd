// A layer split of a model without Dense layers.
// expect-message: hpf::fit: the strategy's layer split \(Filter<G> or Channel<G>\) divides Dense layers, and the model has none
#include <hpf/hpf.hpp>

using Convolutional = hpf::Sequential<hpf::Input<3, 8, 8>, hpf::Conv2D<10, 3>, hpf::GlobalAvgPool, hpf::SoftmaxCrossEntropy>;

void train(const hpf::comm::Communicator& world) {
  hpf::fit<Convolutional, hpf::Pipeline<hpf::Cuts<>, hpf::Filter<2>>>(world, hpf::TrainOptions{}, hpf::DataSource{});
}

int main() {}
