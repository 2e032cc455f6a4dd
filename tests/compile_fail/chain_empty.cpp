// An empty Chain inside a model.
// expect-message: hpf::Chain: a chain needs at least one layer
#include <hpf/layers/dense.hpp>
#include <hpf/model/chain.hpp>
#include <hpf/model/network.hpp>
#include <hpf/model/sequential.hpp>

using Model = hpf::Sequential<hpf::Input<8>, hpf::Dense<8>, hpf::Chain<>>;

int main() {
  hpf::Network<Model> net;
  (void)net;
}
