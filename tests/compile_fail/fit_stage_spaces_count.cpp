// Two stages, one execution space named.
// expect-message: hpf::Pipeline: name one execution space per stage, or none
#include <hpf/train/fit.hpp>
#include <hpf/zoo/models.hpp>

void train(const hpf::comm::Communicator& world) {
  hpf::fit<hpf::zoo::Mlp, hpf::Pipeline<hpf::Cuts<3>, Kokkos::DefaultHostExecutionSpace>>(world, hpf::TrainOptions{}, hpf::DataSource{});
}

int main() {}
