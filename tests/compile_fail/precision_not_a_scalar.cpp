// A precision that is neither a floating-point type nor hpf::Mixed<hpf::bf16>.
// expect-message: hpf: a precision is a floating-point scalar type \(float, double\) or hpf::Mixed<hpf::bf16>
#include <hpf/train/trainer.hpp>
#include <hpf/zoo/models.hpp>

void train(const hpf::data::Dataset& data) { hpf::Trainer<hpf::zoo::Mlp, int> trainer(hpf::TrainOptions{}, data); }

int main() {}
