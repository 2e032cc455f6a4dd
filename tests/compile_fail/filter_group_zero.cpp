// A layer split over a group of no processes.
// expect-message: hpf::Filter<G>: a group has 1 to 64 processes
#include <hpf/parallel/strategy.hpp>

using Strategy = hpf::Pipeline<hpf::Cuts<>, hpf::Filter<0>>;
static_assert(Strategy::split.group == 0);

int main() {}
