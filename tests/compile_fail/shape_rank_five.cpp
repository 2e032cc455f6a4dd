// An input of five extents.
// expect-message: hpf::Shape: a sample shape has 1 \(features\), 2 \(positions, features\), 3
// expect-early: Shape<1, 2, 3, 4, 5>
#include <hpf/layers/dense.hpp>
#include <hpf/model/network.hpp>
#include <hpf/model/sequential.hpp>

using Model = hpf::Sequential<hpf::Input<1, 2, 3, 4, 5>, hpf::Dense<2>>;

int main() {
  hpf::Network<Model> net;
  (void)net;
}
