// MaxPool<0>.
// expect-message: hpf::MaxPool: the window size must be positive
// expect-early: MaxPool<0>
#include <hpf/layers/max_pool.hpp>
#include <hpf/model/network.hpp>
#include <hpf/model/sequential.hpp>

using Model = hpf::Sequential<hpf::Input<1, 8, 8>, hpf::MaxPool<0>>;

int main() {
  hpf::Network<Model> net;
  (void)net;
}
