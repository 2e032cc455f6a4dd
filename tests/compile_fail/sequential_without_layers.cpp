// A model that is only its input.
// expect-message: hpf::Sequential: a model needs at least one layer
#include <hpf/model/network.hpp>
#include <hpf/model/sequential.hpp>

using Model = hpf::Sequential<hpf::Input<8>>;

int main() {
  hpf::Network<Model> net;
  (void)net;
}
