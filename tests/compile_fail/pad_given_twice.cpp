// MaxPool<2, Pad<1>, Pad<1>>.
// expect-message: hpf: Pad<P> given more than once
// expect-early: MaxPool<2, hpf::Pad<1>, hpf::Pad<1> ?>
#include <hpf/layers/max_pool.hpp>
#include <hpf/model/network.hpp>
#include <hpf/model/sequential.hpp>

using Model = hpf::Sequential<hpf::Input<1, 8, 8>, hpf::MaxPool<2, hpf::Pad<1>, hpf::Pad<1>>>;

int main() {
  hpf::Network<Model> net;
  (void)net;
}
