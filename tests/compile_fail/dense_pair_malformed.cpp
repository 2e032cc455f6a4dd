// A DensePair with BatchNorm between its Dense layers: the hidden features of a split pair stay
// with their members, so only elementwise layers may sit there; layer 1 is the pair.
// expect-message: hpf::DensePair: a pair is a Dense layer, elementwise layers
// expect-early: dense_pair_malformed<hpf::Dense<8>, hpf::BatchNorm, hpf::Dense<4>
// expect-index: 1
#include <hpf/layers/batch_norm.hpp>
#include <hpf/layers/dense.hpp>
#include <hpf/layers/flatten.hpp>
#include <hpf/model/dense_pair.hpp>
#include <hpf/model/network.hpp>
#include <hpf/model/sequential.hpp>

using Model = hpf::Sequential<hpf::Input<2, 3, 3>, hpf::Flatten, hpf::DensePair<hpf::Dense<8>, hpf::BatchNorm, hpf::Dense<4>>>;

int main() {
  hpf::Network<Model> net;
  (void)net;
}
