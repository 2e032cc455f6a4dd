#include <hpf/zoo/models.hpp>

#include <support/equivalence.hpp>

#include <doctest/doctest.h>

// One binary, different execution spaces per stage. With a Kokkos built for OpenMP (and Serial)
// the first stage runs on Serial and the second on OpenMP; with Debian's Serial-only Kokkos both
// name the default host space, which still exercises the per-stage plumbing.
namespace {
#if defined(KOKKOS_ENABLE_OPENMP)
using Second = Kokkos::OpenMP;
#else
using Second = Kokkos::DefaultHostExecutionSpace;
#endif
using Model = hpf::zoo::Mlp;
using Mixed = hpf::Pipeline<hpf::Cuts<3>, Kokkos::Serial, Second>;

static_assert(std::is_same_v<hpf::stage_space_t<Mixed, 0, void>, Kokkos::Serial>);
static_assert(std::is_same_v<hpf::stage_space_t<Mixed, 1, void>, Second>);
static_assert(std::is_same_v<hpf::stage_space_t<hpf::DataParallel, 0, Kokkos::Serial>, Kokkos::Serial>);
}  // namespace

TEST_CASE("stages on different execution spaces reproduce single-process training") {
  hpf::TrainOptions o;
  o.batch = 16;
  o.micro_batches = 2;
  o.network.seed = 3;
  o.data_seed = 4;
  for (auto schedule : {hpf::Schedule::gpipe, hpf::Schedule::one_f_one_b}) {
    o.schedule = schedule;
    // Kernels of different spaces may reduce in different orders: within 1e-9, not bitwise.
    hpf_test::check_strategy<Model, Mixed, double>(o, hpf_test::synthetic_source<Model>(16 * 20 + 7), {21, 1e-9});
  }
  MESSAGE("stage 0 on ", std::string(Kokkos::Serial::name()), ", stage 1 on ", std::string(Second::name()));
}
