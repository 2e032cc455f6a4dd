// hpf::AutoAmong with nothing to choose among.
// expect-message: hpf::AutoAmong: name at least one partition
#include <hpf/train/fit.hpp>
#include <hpf/zoo/models.hpp>

void train(const hpf::comm::Communicator& world) {
  hpf::fit<hpf::zoo::Mlp, hpf::AutoAmong<>>(world, hpf::TrainOptions{}, hpf::DataSource{});
}

int main() {}
