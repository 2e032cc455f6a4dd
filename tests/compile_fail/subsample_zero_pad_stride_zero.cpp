// SubsampleZeroPad<16, 0>.
// expect-message: hpf::SubsampleZeroPad: the stride must be positive
// expect-early: SubsampleZeroPad<16, 0>
#include <hpf/layers/flatten.hpp>
#include <hpf/layers/subsample_zero_pad.hpp>
#include <hpf/model/network.hpp>
#include <hpf/model/sequential.hpp>

using Model = hpf::Sequential<hpf::Input<8, 8, 8>, hpf::SubsampleZeroPad<16, 0>>;

int main() {
  hpf::Network<Model> net;
  (void)net;
}
