#include <hpf/optim/adam.hpp>

#include <support/fill.hpp>

#include <doctest/doctest.h>

#include <cmath>

using Space = Kokkos::DefaultExecutionSpace;

TEST_CASE("Adam: torch.optim.Adam's update with bias correction and L2 decay") {
  const std::size_t n = 4;
  hpf::Buffer<double, Space> p("p", n), g("g", n);
  const auto p0 = hpf_test::fill_uniform(p, 2);
  const hpf::AdamOptions o{.learning_rate = 0.01, .beta1 = 0.8, .beta2 = 0.95, .epsilon = 1e-6, .weight_decay = 0.1};
  hpf::Adam<double, Space> adam(n, o);
  std::vector<double> expected = p0, m(n, 0.0), v(n, 0.0);
  for (int t = 1; t <= 4; ++t) {
    const auto grad = hpf_test::fill_uniform(g, 20 + t);
    adam.step(p, g);
    for (std::size_t i = 0; i < n; ++i) {
      const double d = grad[i] + o.weight_decay * expected[i];
      m[i] = o.beta1 * m[i] + (1 - o.beta1) * d;
      v[i] = o.beta2 * v[i] + (1 - o.beta2) * d * d;
      const double denom = std::sqrt(v[i]) / std::sqrt(1 - std::pow(o.beta2, t)) + o.epsilon;
      expected[i] -= o.learning_rate / (1 - std::pow(o.beta1, t)) * m[i] / denom;
    }
    const auto got = hpf_test::to_host(p);
    for (std::size_t i = 0; i < n; ++i) CHECK(got[i] == doctest::Approx(expected[i]).epsilon(1e-13));
  }
  CHECK(adam.steps() == 4);
}
