// Finite-difference gradient checks through the real Network machinery (test support only).
#ifndef HPF_TESTS_SUPPORT_GRADIENT_CHECK_HPP
#define HPF_TESTS_SUPPORT_GRADIENT_CHECK_HPP

#include <hpf/model/network.hpp>
#include <hpf/tensor/random.hpp>

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace hpf_test {

struct GradientCheckResult {
  double worst_input_error = 0;      ///< max relative error of dL/dx entries checked
  double worst_parameter_error = 0;  ///< max relative error of dL/dθ entries checked
  std::string worst_parameter;       ///< tensor holding the worst parameter entry
  std::size_t checked = 0;           ///< number of entries compared
};

/// |a - b| / max(|a|, |b|, floor): relative error that does not explode near zero. The floor is
/// a thousandth of the tensor's largest analytic gradient: central differences carry rounding
/// noise of ~eps*|L|/h, which only matters for entries far below the tensor's scale.
inline double relative_error(double a, double b, double floor) {
  return std::abs(a - b) / std::max({std::abs(a), std::abs(b), floor});
}
inline double largest_magnitude(const double* v, std::size_t n) {
  double m = 0;
  for (std::size_t i = 0; i < n; ++i) m = std::max(m, std::abs(v[i]));
  return m;
}

/// Checks backward() of Model (in double) against central differences of the scalar
///   L = sum(y * w) (w fixed random)   or, for models ending in a loss, L = mean loss,
/// for every input entry and up to `per_tensor` entries of every parameter tensor.
/// `draw_input` draws each input value (default U(-1, 1); token ids for a model that starts with an
/// Embedding); `options` are the network's (its seed is `seed`).
template <class Model, class Space = Kokkos::DefaultExecutionSpace>
GradientCheckResult gradient_check(std::size_t batch, std::uint64_t seed = 1, std::size_t per_tensor = 24,
                                   double step = 1e-5,
                                   std::function<double(hpf::Rng&)> draw_input = [](hpf::Rng& r) {
                                     return r.uniform(-1.0, 1.0);
                                   },
                                   hpf::NetworkOptions options = {}) {
  using Net = hpf::Network<Model, double, Space>;
  using In = typename Model::input_shape;
  using Out = typename Model::output_shape;
  options.seed = seed;
  Net net(options);
  auto tape = net.make_tape(batch);
  hpf::Rng rng(seed, "gradient_check");

  // Random non-zero biases and BatchNorm affine parameters make every path matter.
  for (const auto& info : net.tensors()) {
    if (info.kind != hpf::TensorKind::parameter) continue;
    std::vector<double> v = net.read(info);
    for (double& x : v) x = x == 0.0 || x == 1.0 ? rng.uniform(0.5, 1.5) * (x == 0.0 ? 0.2 : 1.0) : x;
    net.write(info, v);
  }
  auto x_host = Kokkos::create_mirror_view(net.input(tape, batch));
  for (std::size_t i = 0; i < x_host.size(); ++i) x_host.data()[i] = draw_input(rng);
  if constexpr (Net::classifier) {
    auto labels_host = Kokkos::create_mirror_view(net.labels(tape, batch));
    for (std::size_t i = 0; i < batch * Net::label_size; ++i) {
      labels_host(i) = static_cast<std::int32_t>(rng.below(Out::channels));
    }
    Kokkos::deep_copy(net.labels(tape, batch), labels_host);
  } else if constexpr (Net::target_size > 0) {
    auto targets_host = Kokkos::create_mirror_view(net.targets(tape, batch));
    for (std::size_t i = 0; i < targets_host.size(); ++i) targets_host(i) = rng.uniform(-1.0, 1.0);
    Kokkos::deep_copy(net.targets(tape, batch), targets_host);
  }
  std::vector<double> w(Out::size * batch);
  for (double& v : w) v = rng.uniform(-1.0, 1.0);
  const double scale = 1.0 / static_cast<double>(batch);

  auto loss = [&]() {
    Kokkos::deep_copy(net.input(tape, batch), x_host);
    net.forward(tape, batch);
    if constexpr (Model::trainable) {
      return net.loss_sum(tape) * scale;
    } else {
      auto y = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, net.output(tape));
      double sum = 0;
      for (std::size_t i = 0; i < w.size(); ++i) sum += y.data()[i] * w[i];
      return sum;
    }
  };

  // Analytic gradients.
  loss();
  hpf::Buffer<double, Space> dy_buffer("dy", Out::size * batch);
  hpf::Buffer<double, Space> dx_buffer("dx", In::size * batch);
  {
    auto dy_host = Kokkos::create_mirror_view(dy_buffer);
    for (std::size_t i = 0; i < w.size(); ++i) dy_host(i) = w[i];
    Kokkos::deep_copy(dy_buffer, dy_host);
  }
  net.zero_grad();
  auto dx = hpf::activation_view(dx_buffer, In::channels, batch, In::spatial);
  if constexpr (Model::trainable) {
    net.backward(tape, scale, {}, dx);
  } else {
    net.backward(tape, scale, hpf::activation_view(dy_buffer, Out::channels, batch, Out::spatial), dx);
  }
  auto dx_host = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, dx_buffer);

  GradientCheckResult result;
  const double input_floor = 1e-3 * largest_magnitude(dx_host.data(), dx_host.size()) + 1e-12;
  for (std::size_t i = 0; i < x_host.size(); ++i) {
    const double saved = x_host.data()[i];
    x_host.data()[i] = saved + step;
    const double up = loss();
    x_host.data()[i] = saved - step;
    const double down = loss();
    x_host.data()[i] = saved;
    const double numeric = (up - down) / (2 * step);
    result.worst_input_error = std::max(result.worst_input_error, relative_error(numeric, dx_host(i), input_floor));
    ++result.checked;
  }
  for (const auto& info : net.tensors()) {
    if (info.kind != hpf::TensorKind::parameter) continue;
    const std::vector<double> analytic = net.read(info, /*gradient=*/true);
    std::vector<double> values = net.read(info);
    const double floor = 1e-3 * largest_magnitude(analytic.data(), analytic.size()) + 1e-12;
    const std::size_t count = std::min(per_tensor, info.size);
    for (std::size_t k = 0; k < count; ++k) {
      const std::size_t i = count == info.size ? k : rng.below(info.size);
      const double saved = values[i];
      values[i] = saved + step;
      net.write(info, values);
      const double up = loss();
      values[i] = saved - step;
      net.write(info, values);
      const double down = loss();
      values[i] = saved;
      net.write(info, values);
      const double error = relative_error((up - down) / (2 * step), analytic[i], floor);
      if (error > result.worst_parameter_error) {
        result.worst_parameter_error = error;
        result.worst_parameter = info.name;
      }
      ++result.checked;
    }
  }
  return result;
}

}  // namespace hpf_test

#endif  // HPF_TESTS_SUPPORT_GRADIENT_CHECK_HPP
