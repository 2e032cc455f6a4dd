// Balanced<8> of zoo::Mlp: 7 leaves, so at most 7 stages.
// expect-message: hpf::Balanced: more stages than places to cut the model
// expect-early: pipeline_too_many_stages<8, 7>
#include <hpf/parallel/partition.hpp>
#include <hpf/zoo/models.hpp>

int main() {
  using S = hpf::stage_t<hpf::zoo::Mlp, hpf::Balanced<8>, 0>;
  return int(S::first_leaf);
}
