// Balanced<0>: no stage at all.
// expect-message: hpf::Balanced: at least one stage
// expect-early: Balanced<0>
#include <hpf/parallel/partition.hpp>
#include <hpf/zoo/models.hpp>

int main() {
  using S = hpf::stage_t<hpf::zoo::Mlp, hpf::Balanced<0>, 0>;
  return int(S::first_leaf);
}
