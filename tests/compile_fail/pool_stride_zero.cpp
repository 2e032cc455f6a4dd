// MaxPool<2, Stride<0>>.
// expect-message: hpf::MaxPool/AvgPool: Stride<S> must be positive
// expect-early: MaxPool<2, hpf::Stride<0> ?>
// expect-index: 0
#include <hpf/layers/max_pool.hpp>
#include <hpf/model/network.hpp>
#include <hpf/model/sequential.hpp>

using Model = hpf::Sequential<hpf::Input<1, 8, 8>, hpf::MaxPool<2, hpf::Stride<0>>>;

int main() {
  hpf::Network<Model> net;
  (void)net;
}
