// Cuts<0>: a cut at leaf 0 would make an empty first stage (zoo::Mlp has 7 leaves).
// expect-message: hpf::Pipeline: a cut must lie strictly between leaf 0 and the model\'s leaf count
// expect-message: hpf::Pipeline: invalid partition; the error above says why
// expect-early: pipeline_cut_out_of_range<0, 7>
#include <hpf/parallel/partition.hpp>
#include <hpf/zoo/models.hpp>

int main() {
  using S = hpf::stage_t<hpf::zoo::Mlp, hpf::Cuts<0>, 0>;
  return int(S::first_leaf);
}
