// GlobalAvgPool after Flatten: layer 1 gets Shape<64>.
// expect-message: hpf::GlobalAvgPool: the input must be an image
// expect-early: Shape<64>
// expect-index: 1
#include <hpf/layers/flatten.hpp>
#include <hpf/layers/global_avg_pool.hpp>
#include <hpf/model/network.hpp>
#include <hpf/model/sequential.hpp>

using Model = hpf::Sequential<hpf::Input<1, 8, 8>, hpf::Flatten, hpf::GlobalAvgPool>;

int main() {
  hpf::Network<Model> net;
  (void)net;
}
