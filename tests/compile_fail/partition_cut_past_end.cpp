// Cuts<7>: zoo::Mlp has 7 leaves (0 to 6), so a cut at 7 leaves the last stage empty.
// expect-message: hpf::Pipeline: a cut must lie strictly between leaf 0 and the model\'s leaf count
// expect-early: pipeline_cut_out_of_range<7, 7>
#include <hpf/parallel/partition.hpp>
#include <hpf/zoo/models.hpp>

int main() {
  using S = hpf::stage_t<hpf::zoo::Mlp, hpf::Cuts<7>, 0>;
  return int(S::first_leaf);
}
