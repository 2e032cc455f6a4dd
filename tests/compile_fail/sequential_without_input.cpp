// A Sequential whose first entry is a layer, not hpf::Input<dims...>.
// expect-message: hpf::Sequential: the first entry must be hpf::Input<dims...>
// expect-early: Sequential<hpf::Dense<10>
#include <hpf/layers/dense.hpp>
#include <hpf/layers/softmax_cross_entropy.hpp>
#include <hpf/model/network.hpp>
#include <hpf/model/sequential.hpp>

using Model = hpf::Sequential<hpf::Dense<10>, hpf::SoftmaxCrossEntropy>;

int main() {
  hpf::Network<Model> net;
  (void)net;
}
