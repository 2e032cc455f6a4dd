// Cuts<3, 3>: the same cut twice would make an empty stage.
// expect-message: hpf::Pipeline: cuts must increase strictly
// expect-early: pipeline_cuts_not_increasing<3, 3>
#include <hpf/parallel/partition.hpp>
#include <hpf/zoo/models.hpp>

int main() {
  using S = hpf::stage_t<hpf::zoo::Mlp, hpf::Cuts<3, 3>, 0>;
  return int(S::first_leaf);
}
