// Conv2D<8, 3, Stride<1>, Stride<2>>.
// expect-message: hpf: Stride<S> given more than once
// expect-early: Conv2D<8, 3, hpf::Stride<1>, hpf::Stride<2> ?>
#include <hpf/layers/conv2d.hpp>
#include <hpf/model/network.hpp>
#include <hpf/model/sequential.hpp>

using Model = hpf::Sequential<hpf::Input<1, 8, 8>, hpf::Conv2D<8, 3, hpf::Stride<1>, hpf::Stride<2>>>;

int main() {
  hpf::Network<Model> net;
  (void)net;
}
