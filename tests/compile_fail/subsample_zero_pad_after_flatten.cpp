// SubsampleZeroPad after Flatten: layer 1 gets Shape<512>.
// expect-message: hpf::SubsampleZeroPad: the input must be an image
// expect-early: Shape<512>
#include <hpf/layers/flatten.hpp>
#include <hpf/layers/subsample_zero_pad.hpp>
#include <hpf/model/network.hpp>
#include <hpf/model/sequential.hpp>

using Model = hpf::Sequential<hpf::Input<8, 8, 8>, hpf::Flatten, hpf::SubsampleZeroPad<16, 2>>;

int main() {
  hpf::Network<Model> net;
  (void)net;
}
