// SubsampleZeroPad<4, 2> on 8 channels: it can only add channels.
// expect-message: hpf::SubsampleZeroPad: it can only add channels
// expect-early: Shape<8, 8, 8>
#include <hpf/layers/flatten.hpp>
#include <hpf/layers/subsample_zero_pad.hpp>
#include <hpf/model/network.hpp>
#include <hpf/model/sequential.hpp>

using Model = hpf::Sequential<hpf::Input<8, 8, 8>, hpf::SubsampleZeroPad<4, 2>>;

int main() {
  hpf::Network<Model> net;
  (void)net;
}
