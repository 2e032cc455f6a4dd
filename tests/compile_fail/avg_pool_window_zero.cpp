// AvgPool<0>.
// expect-message: hpf::AvgPool: the window size must be positive
// expect-early: AvgPool<0>
#include <hpf/layers/avg_pool.hpp>
#include <hpf/model/network.hpp>
#include <hpf/model/sequential.hpp>

using Model = hpf::Sequential<hpf::Input<1, 8, 8>, hpf::AvgPool<0>>;

int main() {
  hpf::Network<Model> net;
  (void)net;
}
