#include <hpf/system/blas.hpp>

#include <support/scoped_env.hpp>

#include <Kokkos_Core.hpp>
#include <KokkosBlas3_gemm.hpp>

#include <doctest/doctest.h>

#include <omp.h>

#include <fstream>
#include <string>
#include <vector>

namespace {
/// Paths of the mapped OpenBLAS libraries (libopenblas*, of any build).
std::vector<std::string> mapped_openblas() {
  std::ifstream maps("/proc/self/maps");
  std::vector<std::string> found;
  for (std::string line; std::getline(maps, line);) {
    const auto path = line.find('/');
    if (path == std::string::npos || line.find("libopenblas", path) == std::string::npos) continue;
    if (found.empty() || found.back() != line.substr(path)) found.push_back(line.substr(path));
  }
  return found;
}
}  // namespace

// Built only when hpf's CMake package links OpenBLAS' OpenMP build (cmake/hpfBlas.cmake): with
// Kokkos' OpenMP backend, the GEMMs must run on the OpenMP runtime's threads, not on a pthread
// pool of OpenBLAS' own that spins against Kokkos' threads.
TEST_CASE("BLAS: with Kokkos OpenMP, OpenBLAS runs on the OpenMP threads") {
  // A GEMM through KokkosKernels first: the library that answers is the one its calls reach.
  Kokkos::View<float**, Kokkos::LayoutRight, Kokkos::HostSpace> a("a", 64, 64), b("b", 64, 64), c("c", 64, 64);
  Kokkos::deep_copy(a, 1.0f);
  Kokkos::deep_copy(b, 2.0f);
  KokkosBlas::gemm("N", "N", 1.0f, a, b, 0.0f, c);
  CHECK(c(63, 63) == doctest::Approx(128.0f));
  CHECK(hpf::system::blas_threading() == "OpenMP");
  // One OpenBLAS in the process: KokkosKernels' own dependency resolved to the same library.
  const auto libraries = mapped_openblas();
  REQUIRE(libraries.size() == 1);
  CHECK(libraries[0].find("openblas-openmp") != std::string::npos);
  CHECK(hpf::system::blas_description().find("OpenMP threads") != std::string::npos);
}

// OpenBLAS' OpenMP build runs on OpenMP's thread count and its openblas_set_num_threads sets that
// count: the variable it follows is OMP_NUM_THREADS, not OPENBLAS_NUM_THREADS.
TEST_CASE("BLAS: match_library_threads leaves OpenBLAS' OpenMP build to OMP_NUM_THREADS, not OPENBLAS_NUM_THREADS") {
  const int openmp_before = omp_get_max_threads();
  {
    const hpf_test::ScopedEnv omp("OMP_NUM_THREADS", "3"), blas("OPENBLAS_NUM_THREADS", nullptr);
    omp_set_num_threads(3);  // as the runtime read it at start
    hpf::system::match_library_threads(1);
    CHECK(omp_get_max_threads() == 3);  // the user's count stays, oneDNN's and OpenBLAS' alike
  }
  {
    const hpf_test::ScopedEnv omp("OMP_NUM_THREADS", nullptr), blas("OPENBLAS_NUM_THREADS", "1");
    hpf::system::detail::openblas().set_threads(1);
    hpf::system::match_library_threads(2);
    CHECK(omp_get_max_threads() == 2);
    CHECK(hpf::system::blas_threads() == 2);  // matched to the host space: the variable is not this build's
  }
  omp_set_num_threads(openmp_before);
}
