// MaxPool after Flatten: layer 1 gets Shape<784>.
// expect-message: hpf::MaxPool/AvgPool: the input must be an image
// expect-early: MaxPool<2>
// expect-early: Shape<784>
// expect-index: 1
#include <hpf/layers/flatten.hpp>
#include <hpf/layers/max_pool.hpp>
#include <hpf/model/network.hpp>
#include <hpf/model/sequential.hpp>

using Model = hpf::Sequential<hpf::Input<1, 28, 28>, hpf::Flatten, hpf::MaxPool<2>>;

int main() {
  hpf::Network<Model> net;
  (void)net;
}
