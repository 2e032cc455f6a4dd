// hpf::Trainer on a model without a loss layer.
// expect-message: hpf::Trainer: the model must end with a loss layer
#include <hpf/layers/dense.hpp>
#include <hpf/layers/relu.hpp>
#include <hpf/model/sequential.hpp>
#include <hpf/train/trainer.hpp>

using NoLoss = hpf::Sequential<hpf::Input<8>, hpf::Dense<4>, hpf::ReLU, hpf::Dense<2>>;

int main() { return int(sizeof(hpf::Trainer<NoLoss>)); }
