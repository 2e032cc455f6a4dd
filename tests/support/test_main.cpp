// doctest main for hpf's single-process tests: Kokkos lives for the whole run.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <Kokkos_Core.hpp>

int main(int argc, char** argv) {
  Kokkos::ScopeGuard kokkos(argc, argv);
  doctest::Context context(argc, argv);
  return context.run();
}
