// MultiHeadAttention<3> on 16 features: 3 heads cannot split them; layer 2 gets Shape<10, 16>.
// expect-message: hpf::MultiHeadAttention: the feature count D must be a multiple of Heads
// expect-message: hpf::Network: the model is invalid; the first error above names the layer
// expect-early: MultiHeadAttention<3, hpf::Causal ?>
// expect-early: Shape<10, 16>
// expect-index: 2
#include <hpf/layers/multi_head_attention.hpp>
#include <hpf/layers/relu.hpp>
#include <hpf/model/network.hpp>
#include <hpf/model/sequential.hpp>

using Model = hpf::Sequential<hpf::Input<10, 16>, hpf::MultiHeadAttention<4>, hpf::ReLU,
                              hpf::MultiHeadAttention<3, hpf::Causal>>;

int main() {
  hpf::Network<Model> net;
  (void)net;
}
