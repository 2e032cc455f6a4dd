// Conv2D<8, 0>.
// expect-message: hpf::Conv2D: the kernel size must be positive
// expect-early: Conv2D<8, 0>
// expect-index: 0
#include <hpf/layers/conv2d.hpp>
#include <hpf/model/network.hpp>
#include <hpf/model/sequential.hpp>

using Model = hpf::Sequential<hpf::Input<1, 8, 8>, hpf::Conv2D<8, 0>>;

int main() {
  hpf::Network<Model> net;
  (void)net;
}
