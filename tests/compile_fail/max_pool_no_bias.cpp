// MaxPool<2, NoBias>: pooling has no bias.
// expect-message: hpf::MaxPool: NoBias does not apply to pooling
// expect-early: MaxPool<2, hpf::NoBias>
#include <hpf/layers/max_pool.hpp>
#include <hpf/model/network.hpp>
#include <hpf/model/sequential.hpp>

using Model = hpf::Sequential<hpf::Input<1, 8, 8>, hpf::MaxPool<2, hpf::NoBias>>;

int main() {
  hpf::Network<Model> net;
  (void)net;
}
