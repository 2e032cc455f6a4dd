// SPDX-License-Identifier: MIT
// A program hpf re-executes (hpf::system::select_blas_kernels, where OpenBLAS chose narrow kernels)
// keeps the cores it started with: run with OMP_PROC_BIND=close OMP_PLACES=cores (the README's
// placement), its OpenMP threads sit on different cores afterwards, not all on the first one.
// Built with Kokkos' OpenMP backend only (tests/CMakeLists.txt), which compiles with OpenMP.
#define DOCTEST_CONFIG_IMPLEMENT
#include <hpf/system/reexecute.hpp>

#include <doctest/doctest.h>
#include <omp.h>
#include <sched.h>

#include <cstdio>
#include <cstdlib>
#include <set>
#include <string>
#include <vector>

namespace {
constexpr const char* places_before = "HPF_TEST_PLACES_BEFORE";
}

TEST_CASE("re-executed under OMP_PROC_BIND=close: the OpenMP places and a thread on each of them") {
  const char* before = std::getenv(places_before);
  REQUIRE(before != nullptr);  // main re-executed the program
  const int places = std::atoi(before);
  CHECK(omp_get_num_places() == places);
  std::vector<int> cpu(static_cast<std::size_t>(places), -1), place(cpu.size(), -1), allowed(cpu.size(), 0);
#pragma omp parallel num_threads(places)
  {
    const auto t = static_cast<std::size_t>(omp_get_thread_num());
    cpu_set_t mask;
    if (sched_getaffinity(0, sizeof mask, &mask) == 0) allowed[t] = CPU_COUNT(&mask);
    place[t] = omp_get_place_num();
    cpu[t] = sched_getcpu();
  }
  CHECK(std::set<int>(place.begin(), place.end()).size() == static_cast<std::size_t>(places));
  CHECK(std::set<int>(cpu.begin(), cpu.end()).size() == static_cast<std::size_t>(places));
  for (std::size_t t = 0; t < cpu.size(); ++t) {
    INFO("thread ", t, " on place ", place[t], ", CPU ", cpu[t], ", ", allowed[t], " CPUs allowed");
    CHECK(allowed[t] == omp_get_place_num_procs(place[t]));
  }
}

int main(int argc, char** argv) {
  if (!std::getenv(places_before)) {
    const int places = omp_get_num_places();
    if (places < 2) {
      std::printf("hpf-skip: %d OpenMP place(s) (OMP_PLACES=cores on a machine with one core?): nothing to spread\n",
                  places);
      return 0;
    }
    setenv(places_before, std::to_string(places).c_str(), 1);
    hpf::system::reexecute(argv);
    std::fprintf(stderr, "test_reexecute: could not re-execute /proc/self/exe\n");
    return 1;
  }
  doctest::Context context(argc, argv);
  return context.run();
}
