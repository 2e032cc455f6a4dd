// AvgPool<2, NoBias>: pooling has no bias.
// expect-message: hpf::AvgPool: NoBias does not apply to pooling
// expect-early: AvgPool<2, hpf::NoBias>
#include <hpf/layers/avg_pool.hpp>
#include <hpf/model/network.hpp>
#include <hpf/model/sequential.hpp>

using Model = hpf::Sequential<hpf::Input<1, 8, 8>, hpf::AvgPool<2, hpf::NoBias>>;

int main() {
  hpf::Network<Model> net;
  (void)net;
}
