#include <hpf/optim/optimizer.hpp>

#include <support/fill.hpp>

#include <doctest/doctest.h>

using Space = Kokkos::DefaultExecutionSpace;

TEST_CASE("Optimizer: the run-time choice behaves as the optimizer it wraps") {
  hpf::Buffer<double, Space> a("a", 6), b("b", 6), g("g", 6);
  hpf_test::fill_uniform(a, 1);
  hpf_test::fill_uniform(b, 1);
  hpf_test::fill_uniform(g, 2);
  SUBCASE("SGD") {
    const hpf::SgdOptions o{.learning_rate = 0.05, .momentum = 0.9};
    hpf::Optimizer<double, Space> wrapped(6, o);
    hpf::Sgd<double, Space> direct(6, o);
    for (int i = 0; i < 2; ++i) {
      wrapped.step(a, g);
      direct.step(b, g);
    }
    CHECK(hpf_test::to_host(a) == hpf_test::to_host(b));
  }
  SUBCASE("Adam, with a learning-rate change") {
    hpf::Optimizer<double, Space> wrapped(6, hpf::AdamOptions{});
    hpf::Adam<double, Space> direct(6, hpf::AdamOptions{});
    wrapped.step(a, g);
    direct.step(b, g);
    wrapped.set_learning_rate(0.5);
    direct.set_learning_rate(0.5);
    wrapped.step(a, g);
    direct.step(b, g);
    CHECK(hpf_test::to_host(a) == hpf_test::to_host(b));
  }
}
