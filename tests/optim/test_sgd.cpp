#include <hpf/optim/sgd.hpp>

#include <support/fill.hpp>

#include <doctest/doctest.h>

using Space = Kokkos::DefaultExecutionSpace;

TEST_CASE("Sgd: PyTorch's momentum and weight-decay update, step by step") {
  std::size_t n = 5;
  SUBCASE("one block") {}
  SUBCASE("several blocks and a partial one") { n = 2 * hpf::detail::elements_per_block<Space>() + 3; }
  hpf::Buffer<double, Space> p("p", n), g("g", n);
  const auto p0 = hpf_test::fill_uniform(p, 1);
  hpf::Sgd<double, Space> sgd(n, {.learning_rate = 0.1, .momentum = 0.9, .weight_decay = 0.01});
  std::vector<double> expected = p0, velocity(n, 0.0);
  for (int step = 0; step < 3; ++step) {
    const auto grad = hpf_test::fill_uniform(g, 10 + step);
    sgd.step(p, g);
    for (std::size_t i = 0; i < n; ++i) {
      const double d = grad[i] + 0.01 * expected[i];
      velocity[i] = 0.9 * velocity[i] + d;  // first step: v = d, as torch's buf = clone(d)
      expected[i] -= 0.1 * velocity[i];
    }
    const auto got = hpf_test::to_host(p);
    for (std::size_t i = 0; i < n; ++i) CHECK(got[i] == doctest::Approx(expected[i]).epsilon(1e-14));
  }
}

TEST_CASE("Sgd: plain gradient descent without momentum keeps no state") {
  hpf::Buffer<float, Space> p("p", 3), g("g", 3);
  Kokkos::deep_copy(p, 1.0f);
  Kokkos::deep_copy(g, 2.0f);
  hpf::Sgd<float, Space> sgd(3, {.learning_rate = 0.25});
  CHECK(sgd.velocity().extent(0) == 0);
  sgd.step(p, g);
  CHECK(hpf_test::to_host(p) == std::vector<double>{0.5, 0.5, 0.5});
}
