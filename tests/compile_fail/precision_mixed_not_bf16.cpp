// hpf::Mixed with a reduced type hpf has no kernels for.
// expect-message: hpf::Mixed: the reduced type must be hpf::bf16
#include <hpf/train/trainer.hpp>
#include <hpf/zoo/models.hpp>

struct fp8 {};

void train(const hpf::data::Dataset& data) { hpf::Trainer<hpf::zoo::Mlp, hpf::Mixed<fp8>> trainer(hpf::TrainOptions{}, data); }

int main() {}
