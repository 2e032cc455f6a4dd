// doctest main for hpf's MPI tests: MPI, then Kokkos, then the tests on every rank. Ranks other
// than 0 print failures only; every rank exits with the worst result, so a failure on any rank
// fails the test.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <hpf/comm/environment.hpp>
#include <hpf/comm/transfer.hpp>

int main(int argc, char** argv) {
  int failed = 0;
  {
    hpf::comm::Environment environment(argc, argv);
    doctest::Context context(argc, argv);
    if (environment.world().rank() != 0) context.setOption("minimal", true);
    const int result = context.run();
    failed = hpf::comm::allreduce_value(environment.world(), result, MPI_MAX);
  }
  return failed;
}
