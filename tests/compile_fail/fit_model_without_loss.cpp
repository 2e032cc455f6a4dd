// hpf::fit on a model without a loss layer.
// expect-message: hpf::fit: the model must end with a loss layer
#include <hpf/train/fit.hpp>
#include <hpf/zoo/models.hpp>

using NoLoss = hpf::Sequential<hpf::Input<8>, hpf::Dense<4>, hpf::ReLU, hpf::Dense<2>>;

void train(const hpf::comm::Communicator& world) {
  hpf::fit<NoLoss, hpf::DataParallel>(world, hpf::TrainOptions{}, hpf::DataSource{});
}

int main() {}
