#include <hpf/layers/gelu.hpp>
#include <hpf/model/network.hpp>
#include <hpf/model/sequential.hpp>

#include <support/fill.hpp>
#include <support/gradient_check.hpp>

#include <doctest/doctest.h>

#include <cmath>

TEST_CASE("GELU: x * Phi(x) with erf, on any shape") {
  using M = hpf::Sequential<hpf::Input<2, 3, 3>, hpf::GELU>;
  static_assert(std::is_same_v<M::output_shape, hpf::Shape<2, 3, 3>>);
  static_assert(M::cost.parameters == 0);
  hpf::Network<M, double> net;
  auto tape = net.make_tape(2);
  const auto x = hpf_test::fill_uniform(net.input(tape, 2), 3, -4.0, 4.0);
  net.forward(tape, 2);
  const auto y = hpf_test::to_host(net.output(tape));
  for (std::size_t i = 0; i < x.size(); ++i) CHECK(y[i] == doctest::Approx(x[i] * 0.5 * (1 + std::erf(x[i] / std::sqrt(2.0)))).epsilon(1e-15));
  CHECK(hpf_test::gradient_check<M>(3).worst_input_error < 1e-7);
}

TEST_CASE("GELUTanh: the tanh approximation, within 1e-3 of the exact form") {
  using M = hpf::Sequential<hpf::Input<40>, hpf::GELUTanh>;
  hpf::Network<M, double> net;
  auto tape = net.make_tape(5);
  const auto x = hpf_test::fill_uniform(net.input(tape, 5), 4, -5.0, 5.0);
  net.forward(tape, 5);
  const auto y = hpf_test::to_host(net.output(tape));
  const double pi = std::acos(-1.0);
  for (std::size_t i = 0; i < x.size(); ++i) {
    const double v = x[i];
    CHECK(y[i] == doctest::Approx(0.5 * v * (1 + std::tanh(std::sqrt(2 / pi) * (v + 0.044715 * v * v * v)))).epsilon(1e-15));
    CHECK(std::abs(y[i] - v * 0.5 * (1 + std::erf(v / std::sqrt(2.0)))) < 1e-3);
  }
  CHECK(hpf_test::gradient_check<M>(3).worst_input_error < 1e-7);
  CHECK(hpf::GELUTanh::bind<hpf::Shape<4>>::describe() == "GELU(tanh)");
}

TEST_CASE("GELU: the gradient where the output does not determine the input") {
  // GELU has its minimum near x = -0.75: inputs on either side give the same output, but
  // gradients of opposite sign; backward reads the input.
  using M = hpf::Sequential<hpf::Input<1>, hpf::GELU>;
  hpf::Network<M, double> net;
  auto tape = net.make_tape(2);
  auto x = Kokkos::create_mirror_view(net.input(tape, 2));
  x(0, 0, 0) = -0.4;
  x(0, 1, 0) = -1.2;
  Kokkos::deep_copy(net.input(tape, 2), x);
  net.forward(tape, 2);
  hpf::Buffer<double, Kokkos::DefaultExecutionSpace> dy("dy", 2), dx("dx", 2);
  Kokkos::deep_copy(dy, 1.0);
  net.backward(tape, 1.0, hpf::activation_view(dy, 1, 2, 1), hpf::activation_view(dx, 1, 2, 1));
  const auto dx_host = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), dx);
  const double y0 = hpf_test::to_host(net.output(tape))[0], y1 = hpf_test::to_host(net.output(tape))[1];
  CHECK(std::abs(y0 - y1) < 1e-3);  // nearly the same output ...
  CHECK(dx_host(0) > 0.15);         // ... on opposite slopes
  CHECK(dx_host(1) < -0.1);
}

TEST_CASE("GELUTanh in float: the vectorising tanh keeps output and gradient within float's rounding") {
  // Float's tanh is a rational approximation within 4e-7 of tanh (layers/gelu.hpp); double's is
  // the exact function.
  for (double u = -12; u <= 12; u += 1.0 / 64) {
    CHECK(std::abs(static_cast<double>(hpf::detail::gelu_tanh(static_cast<float>(u))) - std::tanh(static_cast<double>(static_cast<float>(u)))) < 4e-7);
  }
  // Saturated ends: exactly +-1, so that the derivative's 1 - tanh^2 vanishes there as tanhf's.
  CHECK(hpf::detail::gelu_tanh(8.0f) == 1.0f);
  CHECK(hpf::detail::gelu_tanh(-30.0f) == -1.0f);
  CHECK(hpf::detail::gelu_derivative<hpf::GeluForm::tanh>(-8.0f) == 0.0f);
  for (double v = -8; v <= 8; v += 1.0 / 32) {
    const float x = static_cast<float>(v);
    const double exact = hpf::detail::gelu<hpf::GeluForm::tanh>(static_cast<double>(x));
    const double slope = hpf::detail::gelu_derivative<hpf::GeluForm::tanh>(static_cast<double>(x));
    CHECK(std::abs(hpf::detail::gelu<hpf::GeluForm::tanh>(x) - exact) <= 2e-6 * std::max(1.0, std::abs(exact)));
    CHECK(std::abs(hpf::detail::gelu_derivative<hpf::GeluForm::tanh>(x) - slope) <= 1e-5 * std::max(1.0, std::abs(slope)));
  }
}
