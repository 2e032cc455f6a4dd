// ResNet-20: top-level layer 3 is Repeat<3, BasicBlock<16>> over leaves 3 to 20, 6 leaves a
// block; a cut at leaf 5 falls inside the first block (leaves 3 to 8).
// expect-message: hpf::Pipeline: the cut falls inside a block
// expect-early: pipeline_cut_inside_block<5, 3, 3, 8>
#include <hpf/parallel/partition.hpp>
#include <hpf/zoo/models.hpp>

int main() {
  using S = hpf::stage_t<hpf::zoo::ResNet20, hpf::Cuts<5>, 0>;
  return int(S::first_leaf);
}
