// Dense<0>.
// expect-message: hpf::Dense: the number of outputs must be positive
// expect-early: Dense<0>
// expect-index: 0
#include <hpf/layers/dense.hpp>
#include <hpf/model/network.hpp>
#include <hpf/model/sequential.hpp>

using Model = hpf::Sequential<hpf::Input<8>, hpf::Dense<0>>;

int main() {
  hpf::Network<Model> net;
  (void)net;
}
