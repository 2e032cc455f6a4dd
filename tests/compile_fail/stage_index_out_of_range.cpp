// Stage 2 of a 2-stage partition (stages 0 and 1).
// expect-message: hpf::Stage: stage index out of range
// expect-early: Stage<hpf::Sequential<.*hpf::Cuts<3>, 2>
#include <hpf/parallel/partition.hpp>
#include <hpf/zoo/models.hpp>

int main() {
  using S = hpf::stage_t<hpf::zoo::Mlp, hpf::Cuts<3>, 2>;
  return int(S::first_leaf);
}
