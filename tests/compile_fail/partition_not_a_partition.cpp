// A partition that is neither Cuts<...> nor Balanced<S>.
// expect-message: hpf::Pipeline: the partition must be hpf::Cuts<...> or hpf::Balanced<S>
// expect-early: resolve_partition<.*int>
#include <hpf/parallel/partition.hpp>
#include <hpf/zoo/models.hpp>

int main() {
  using S = hpf::stage_t<hpf::zoo::Mlp, int, 0>;
  return int(S::first_leaf);
}
