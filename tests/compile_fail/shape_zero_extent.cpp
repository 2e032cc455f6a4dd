// An input with an extent 0.
// expect-message: hpf::Shape: every extent must be positive
// expect-early: Shape<0, 28, 28>
#include <hpf/layers/conv2d.hpp>
#include <hpf/model/network.hpp>
#include <hpf/model/sequential.hpp>

using Model = hpf::Sequential<hpf::Input<0, 28, 28>, hpf::Conv2D<8, 3>>;

int main() {
  hpf::Network<Model> net;
  (void)net;
}
