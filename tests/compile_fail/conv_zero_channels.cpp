// Conv2D<0, 3>: no output channels.
// expect-message: hpf::Conv2D: the number of output channels must be positive
// expect-early: Conv2D<0, 3>
#include <hpf/layers/conv2d.hpp>
#include <hpf/layers/flatten.hpp>
#include <hpf/model/network.hpp>
#include <hpf/model/sequential.hpp>

using Model = hpf::Sequential<hpf::Input<1, 8, 8>, hpf::Conv2D<0, 3>, hpf::Flatten>;

int main() {
  hpf::Network<Model> net;
  (void)net;
}
