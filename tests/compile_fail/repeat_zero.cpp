// Repeat<0, ...>: a block repeated no times.
// expect-message: hpf::Repeat: repeat a block at least once
// expect-early: Repeat<0,
#include <hpf/layers/dense.hpp>
#include <hpf/layers/relu.hpp>
#include <hpf/model/chain.hpp>
#include <hpf/model/repeat.hpp>
#include <hpf/model/network.hpp>
#include <hpf/model/sequential.hpp>

using Model = hpf::Sequential<hpf::Input<8>, hpf::Repeat<0, hpf::Chain<hpf::Dense<8>, hpf::ReLU>>>;

int main() {
  hpf::Network<Model> net;
  (void)net;
}
