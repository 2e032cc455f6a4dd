// A filter and a channel split named in one strategy.
// expect-message: hpf::Pipeline: name at most one layer split \(Filter<G>, Channel<G> or Spatial<G>\)
#include <hpf/parallel/strategy.hpp>

using Strategy = hpf::Pipeline<hpf::Cuts<>, hpf::Filter<2>, hpf::Channel<2>>;
static_assert(Strategy::split.group == 2);

int main() {}
