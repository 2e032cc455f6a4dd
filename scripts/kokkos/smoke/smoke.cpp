// Smoke test of a Kokkos + KokkosKernels install made by scripts/kokkos/build.sh.
// Checks what hpf relies on: KOKKOS_LAMBDA parallel_for / parallel_reduce, a
// TeamPolicy with a nested reduction, the OpenMP thread count, and float + double
// KokkosBlas::gemm on LayoutRight views ("N"/"T", subviews) reaching the TPL
// (OpenBLAS or cuBLAS: the region KokkosBlas::gemm[TPL_BLAS,...]), with results
// checked against a host reference.
// Usage: hpf_kokkos_smoke [--expect-threads=N] [Kokkos options]
#include <Kokkos_Core.hpp>
#include <KokkosBlas3_gemm.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#ifdef KOKKOS_ENABLE_OPENMP
#include <omp.h>
#endif

namespace {

std::vector<std::string> g_regions;  // every profiling region pushed
void on_push_region(const char* name) { g_regions.emplace_back(name); }

int g_failures = 0;
void expect(bool ok, const std::string& what) {
  std::printf("%s %s\n", ok ? "ok  " : "FAIL", what.c_str());
  if (!ok) ++g_failures;
}

using Space = Kokkos::DefaultExecutionSpace;

// (nvcc does not allow a KOKKOS_LAMBDA inside another lambda: keep this a function)
template <class View>
void fill(const View& v, int salt) {
  using T = typename View::value_type;
  Kokkos::parallel_for(
      "hpf::smoke::fill",
      Kokkos::MDRangePolicy<Space, Kokkos::Rank<2>>(
          {0, 0}, {static_cast<int64_t>(v.extent(0)), static_cast<int64_t>(v.extent(1))}),
      KOKKOS_LAMBDA(const int i, const int j) {
        v(i, j) = static_cast<T>(((i * 7 + j * 3 + salt) % 11) - 5) / T(4);
      });
}

// C = A(op) * B(op) on sub-blocks of larger LayoutRight views; result vs. host loop.
template <class T>
void check_gemm(const char* ta, const char* tb, int m, int n, int k, bool sub) {
  using View = Kokkos::View<T**, Kokkos::LayoutRight, Space>;
  const bool at = ta[0] == 'T', bt = tb[0] == 'T';
  const int pad = sub ? 3 : 0;  // subviews keep the parent's row stride
  View a_full("A", (at ? k : m) + pad, (at ? m : k) + pad);
  View b_full("B", (bt ? n : k) + pad, (bt ? k : n) + pad);
  View c_full("C", m + pad, n + pad);
  fill(a_full, 1);
  fill(b_full, 2);
  fill(c_full, 3);
  auto rows = [&](int r) { return std::make_pair(0, r); };
  auto a = Kokkos::subview(a_full, rows(at ? k : m), rows(at ? m : k));
  auto b = Kokkos::subview(b_full, rows(bt ? n : k), rows(bt ? k : n));
  auto c = Kokkos::subview(c_full, rows(m), rows(n));
  static_assert(std::is_same_v<typename decltype(a)::array_layout, Kokkos::LayoutRight>,
                "a subview of a LayoutRight view should stay LayoutRight in Kokkos 3.4");

  // host copies of the whole (contiguous) views; create_mirror always allocates
  auto copy = [](const View& v) {
    auto h = Kokkos::create_mirror(v);
    Kokkos::deep_copy(h, v);
    return h;
  };
  const auto ha = copy(a_full), hb = copy(b_full), hc = copy(c_full);
  const T alpha = T(1.5), beta = T(0.5);

  g_regions.clear();
  KokkosBlas::gemm(ta, tb, alpha, a, b, beta, c);
  Kokkos::fence();
  std::string regions;
  bool tpl = false;
  for (const auto& r : g_regions) {
    regions += (regions.empty() ? "" : " ") + r;
    tpl = tpl || r.find("TPL_BLAS") != std::string::npos;
  }

  const auto result = copy(c_full);
  double worst = 0;
  for (int i = 0; i < m + pad; ++i)
    for (int j = 0; j < n + pad; ++j) {
      double want = double(hc(i, j));  // outside the block C must stay as it was
      if (i < m && j < n) {
        double s = 0;
        for (int p = 0; p < k; ++p)
          s += double(at ? ha(p, i) : ha(i, p)) * double(bt ? hb(j, p) : hb(p, j));
        want = alpha * s + beta * want;
      }
      worst = std::max(worst, std::abs(want - double(result(i, j))));
    }
  const double tol = sizeof(T) == 4 ? 1e-3 * k : 1e-10 * k;
  char what[256];
  std::snprintf(what, sizeof what, "gemm<%s>(%s,%s) %dx%dx%d%s: max error %.2g, regions: %s",
                sizeof(T) == 4 ? "float" : "double", ta, tb, m, n, k,
                sub ? " on subviews" : "", worst, regions.c_str());
  expect(worst <= tol && tpl, what);
}

}  // namespace

int main(int argc, char* argv[]) {
  [[maybe_unused]] int expect_threads = 0;
  for (int i = 1; i < argc; ++i)
    if (std::strncmp(argv[i], "--expect-threads=", 17) == 0) expect_threads = std::atoi(argv[i] + 17);

  Kokkos::ScopeGuard guard(argc, argv);
  Kokkos::Tools::Experimental::set_push_region_callback(on_push_region);
  std::printf("Kokkos %d, C++ %ld, default execution space %s, concurrency %d\n", KOKKOS_VERSION,
              static_cast<long>(__cplusplus), Space::name(), Space().concurrency());

  const int n = 1 << 20;
  Kokkos::View<double*, Space> x("x", n);
  Kokkos::parallel_for("hpf::smoke::iota", Kokkos::RangePolicy<Space>(0, n),
                       KOKKOS_LAMBDA(const int i) { x(i) = i; });
  double sum = 0;
  Kokkos::parallel_reduce(
      "hpf::smoke::sum", Kokkos::RangePolicy<Space>(0, n),
      KOKKOS_LAMBDA(const int i, double& s) { s += x(i); }, sum);
  expect(sum == 0.5 * double(n) * double(n - 1), "parallel_for + parallel_reduce (KOKKOS_LAMBDA)");

  using Member = Kokkos::TeamPolicy<Space>::member_type;
  const int league = 64, per_team = n / league;
  double team_sum = 0;
  Kokkos::parallel_reduce(
      "hpf::smoke::team", Kokkos::TeamPolicy<Space>(league, Kokkos::AUTO),
      KOKKOS_LAMBDA(const Member& team, double& s) {
        double part = 0;
        Kokkos::parallel_reduce(
            Kokkos::TeamThreadRange(team, per_team),
            [&](const int j, double& p) { p += x(team.league_rank() * per_team + j); }, part);
        Kokkos::single(Kokkos::PerTeam(team), [&]() { s += part; });
      },
      team_sum);
  expect(team_sum == sum, "TeamPolicy with a nested TeamThreadRange reduction");

#ifdef KOKKOS_ENABLE_OPENMP
  {
    Kokkos::View<int*, Kokkos::HostSpace> seen("seen", Kokkos::OpenMP().concurrency());
    Kokkos::parallel_for("hpf::smoke::threads", Kokkos::RangePolicy<Kokkos::OpenMP>(0, n),
                         [=](const int) { seen(omp_get_thread_num()) = 1; });
    int distinct = 0;
    for (size_t t = 0; t < seen.extent(0); ++t) distinct += seen(t);
    std::printf("OpenMP: %d distinct threads ran a parallel_for\n", distinct);
    if (expect_threads > 0)
      expect(distinct == expect_threads,
             "OpenMP runs on " + std::to_string(expect_threads) + " threads");
  }
#else
  (void)expect_threads;
#endif

  for (bool sub : {false, true}) {
    check_gemm<float>("N", "N", 64, 48, 40, sub);
    check_gemm<float>("T", "N", 64, 48, 40, sub);
    check_gemm<float>("N", "T", 64, 48, 40, sub);
    check_gemm<double>("N", "N", 64, 48, 40, sub);
    check_gemm<double>("T", "T", 64, 48, 40, sub);
  }

  std::printf("%s\n", g_failures == 0 ? "ALL OK" : "FAILED");
  return g_failures == 0 ? 0 : 1;
}
