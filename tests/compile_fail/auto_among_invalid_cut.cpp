// hpf::AutoAmong with a candidate cut past the model's end (zoo::Mlp has 7 leaves).
// expect-message: hpf::Pipeline: a cut must lie strictly between leaf 0
// expect-message: hpf::AutoAmong: invalid partition; the error above says why
// expect-early: pipeline_cut_out_of_range<9, 7>
#include <hpf/train/fit.hpp>
#include <hpf/zoo/models.hpp>

void train(const hpf::comm::Communicator& world) {
  hpf::fit<hpf::zoo::Mlp, hpf::AutoAmong<hpf::Balanced<2>, hpf::Cuts<9>>>(world, hpf::TrainOptions{}, hpf::DataSource{});
}

int main() {}
