// One forward and backward pass of a whole network on fixed random data, for comparing two ways
// of computing the same model (a split one against the unsplit one).
#ifndef HPF_TESTS_SUPPORT_NETWORK_PASS_HPP
#define HPF_TESTS_SUPPORT_NETWORK_PASS_HPP

#include <hpf/model/network.hpp>
#include <hpf/tensor/random.hpp>

#include <doctest/doctest.h>

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <vector>

namespace hpf_test {

/// What one pass produced: the output, the input gradient, every parameter's gradient and every
/// buffer (BatchNorm's running statistics), each in binding order.
struct Pass {
  std::vector<double> output, input_grad, gradients, buffers;
};

/// One forward and backward of Model (in T) on `batch` samples of U(-1, 1) values, the output
/// gradient U(-1, 1) too.
template <class Model, class T = double>
Pass run_pass(const hpf::NetworkOptions& options, std::size_t batch) {
  hpf::Network<Model, T> net(options);
  auto tape = net.make_tape(batch);
  hpf::Rng rng(4, "network pass");
  auto x = Kokkos::create_mirror_view(net.input(tape, batch));
  for (std::size_t i = 0; i < x.size(); ++i) x.data()[i] = static_cast<T>(rng.uniform(-1.0, 1.0));
  Kokkos::deep_copy(net.input(tape, batch), x);
  net.forward(tape, batch);
  auto y = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, net.output(tape));
  Pass p;
  p.output.assign(y.data(), y.data() + y.size());
  hpf::Buffer<T, Kokkos::DefaultExecutionSpace> dy("dy", y.size()), dx("dx", x.size());
  auto dy_host = Kokkos::create_mirror_view(dy);
  for (std::size_t i = 0; i < dy_host.size(); ++i) dy_host(i) = static_cast<T>(rng.uniform(-1.0, 1.0));
  Kokkos::deep_copy(dy, dy_host);
  const auto out = net.output(tape);
  const auto in = net.input(tape, batch);
  net.backward(tape, T(1), hpf::activation_view(dy, out.extent(0), out.extent(1), out.extent(2)),
               hpf::activation_view(dx, in.extent(0), in.extent(1), in.extent(2)));
  auto dx_host = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, dx);
  p.input_grad.assign(dx_host.data(), dx_host.data() + dx_host.size());
  for (const auto& t : net.tensors()) {
    const bool parameter = t.kind == hpf::TensorKind::parameter;
    const auto values = net.read(t, parameter);
    auto& into = parameter ? p.gradients : p.buffers;
    into.insert(into.end(), values.begin(), values.end());
  }
  return p;
}

/// max |a - b| over max |b|.
inline double worst_relative(const std::vector<double>& a, const std::vector<double>& b) {
  REQUIRE(a.size() == b.size());
  double scale = 0, worst = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    scale = std::max(scale, std::abs(b[i]));
    worst = std::max(worst, std::abs(a[i] - b[i]));
  }
  return worst / std::max(scale, 1e-300);
}

}  // namespace hpf_test

#endif  // HPF_TESTS_SUPPORT_NETWORK_PASS_HPP
