#include <hpf/layers/avg_pool3d.hpp>
#include <hpf/layers/max_pool3d.hpp>
#include <hpf/model/network.hpp>
#include <hpf/model/sequential.hpp>

#include <support/fill.hpp>
#include <support/gradient_check.hpp>

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <vector>

namespace {
// A pooling window's sizes at run time, for the direct loops.
struct Window {
  std::size_t c, d, h, w, k, s, p;
  std::size_t od() const { return (d + 2 * p - k) / s + 1; }
  std::size_t oh() const { return (h + 2 * p - k) / s + 1; }
  std::size_t ow() const { return (w + 2 * p - k) / s + 1; }
  std::size_t in_spatial() const { return d * h * w; }
  std::size_t out_spatial() const { return od() * oh() * ow(); }
};

template <class Model>
Window window_of() {
  using In = typename Model::input_shape;
  const auto& g = hpf::at_t<typename Model::bound_layers, 0>::geometry;
  return {In::channels, In::depth, In::height, In::width, g.kernel(), g.stride(), g.pad()};
}

// Calls f(output index, input voxel index) for every voxel of every window in PyTorch's order:
// outputs in (d, h, w) order, each window's voxels in (d, h, w) order; padding skipped.
template <class F>
void for_each_window_voxel(const Window& g, F f) {
  for (std::size_t z = 0, out = 0; z < g.od(); ++z)
    for (std::size_t y = 0; y < g.oh(); ++y)
      for (std::size_t x = 0; x < g.ow(); ++x, ++out)
        for (std::size_t a = 0; a < g.k; ++a)
          for (std::size_t b = 0; b < g.k; ++b)
            for (std::size_t e = 0; e < g.k; ++e) {
              const long id = long(z * g.s + a) - long(g.p), ih = long(y * g.s + b) - long(g.p),
                         iw = long(x * g.s + e) - long(g.p);
              if (id < 0 || ih < 0 || iw < 0 || id >= long(g.d) || ih >= long(g.h) || iw >= long(g.w)) continue;
              f(out, std::size_t((id * long(g.h) + ih) * long(g.w) + iw));
            }
}

double max_difference_of(const std::vector<double>& a, const std::vector<double>& b) {
  REQUIRE(a.size() == b.size());
  double worst = 0;
  for (std::size_t i = 0; i < a.size(); ++i) worst = std::max(worst, std::abs(a[i] - b[i]));
  return worst;
}

// Forward of Model on n samples against nn.MaxPool3d's definition (max = true; the first maximum
// wins) or nn.AvgPool3d's (count_include_pad: the sum over the window divided by K^3); returns
// the largest absolute difference.
template <class Model>
double forward_difference(std::size_t n, bool max, double lo = -1, double hi = 1) {
  const Window g = window_of<Model>();
  hpf::Network<Model, double> net;
  auto tape = net.make_tape(n);
  const auto x = hpf_test::fill_uniform(net.input(tape, n), 9, lo, hi);
  net.forward(tape, n);
  const auto y = hpf_test::to_host(net.output(tape));
  double worst = 0;
  for (std::size_t plane = 0; plane < g.c * n; ++plane) {
    const double* in = x.data() + plane * g.in_spatial();
    std::vector<double> expected(g.out_spatial(), max ? -std::numeric_limits<double>::infinity() : 0.0);
    for_each_window_voxel(g, [&](std::size_t out, std::size_t v) {
      expected[out] = max ? std::max(expected[out], in[v]) : expected[out] + in[v];
    });
    for (std::size_t out = 0; out < g.out_spatial(); ++out) {
      const double e = max ? expected[out] : expected[out] / double(g.k * g.k * g.k);
      worst = std::max(worst, std::abs(y[plane * g.out_spatial() + out] - e));
    }
  }
  return worst;
}

using MaxUnpadded = hpf::Sequential<hpf::Input<2, 4, 5, 6>, hpf::MaxPool3D<2>>;  // the unrolled 2x2x2 path
using MaxPadded = hpf::Sequential<hpf::Input<2, 5, 5, 6>, hpf::MaxPool3D<3, hpf::Stride<2>, hpf::Pad<1>>>;
using AvgUnpadded = hpf::Sequential<hpf::Input<2, 4, 6, 5>, hpf::AvgPool3D<2>>;
using AvgPadded = hpf::Sequential<hpf::Input<1, 5, 6, 5>, hpf::AvgPool3D<3, hpf::Stride<2>, hpf::Pad<1>>>;
}  // namespace

TEST_CASE("MaxPool3D and AvgPool3D: output shapes, constexpr costs, description") {
  static_assert(std::is_same_v<MaxUnpadded::output_shape, hpf::Shape<2, 2, 2, 3>>);
  static_assert(std::is_same_v<MaxPadded::output_shape, hpf::Shape<2, 3, 3, 3>>);
  static_assert(std::is_same_v<AvgUnpadded::output_shape, hpf::Shape<2, 2, 3, 2>>);
  static_assert(std::is_same_v<AvgPadded::output_shape, hpf::Shape<1, 3, 3, 3>>);
  static_assert(std::is_same_v<hpf::Sequential<hpf::Input<8, 7, 9, 4>, hpf::MaxPool3D<3, hpf::Stride<1>>>::output_shape,
                               hpf::Shape<8, 5, 7, 2>>);
  static_assert(MaxPadded::layer_costs[0].saved_indices == 2 * 27);  // one argmax per output
  static_assert(MaxPadded::layer_costs[0].forward_flops == 2 * 27 * 27);
  static_assert(AvgPadded::layer_costs[0].saved_indices == 0);
  static_assert(AvgPadded::layer_costs[0].backward_flops == 150 * 27);
  static_assert(MaxPadded::cost.parameters == 0 && AvgPadded::cost.parameters == 0);
  CHECK(hpf::at_t<MaxUnpadded::bound_layers, 0>::describe() == "MaxPool3D(2x2x2)");
  CHECK(hpf::at_t<AvgPadded::bound_layers, 0>::describe() == "AvgPool3D(3x3x3, stride 2, pad 1)");
}

TEST_CASE("MaxPool3D: forward is nn.MaxPool3d's; padding never wins") {
  CHECK(forward_difference<MaxUnpadded>(3, true) == 0.0);
  CHECK(forward_difference<MaxPadded>(2, true, -3.0, -1.0) == 0.0);  // all negative: zero padding would win
}

TEST_CASE("MaxPool3D: the first maximum in (d, h, w) order takes the gradient, as PyTorch's indices") {
  // Values 0 or 1: most windows hold their maximum several times.
  const auto first_maximum_wins = []<class Model>(Model*, std::size_t n) {
    const Window g = window_of<Model>();
    using In = typename Model::input_shape;
    using Out = typename Model::output_shape;
    hpf::Network<Model, double> net;
    auto tape = net.make_tape(n);
    auto x_host = Kokkos::create_mirror_view(net.input(tape, n));
    std::vector<double> x(x_host.size());
    for (std::size_t i = 0; i < x.size(); ++i) x_host.data()[i] = x[i] = double((i * 7 + i / 5) % 3 == 0);
    Kokkos::deep_copy(net.input(tape, n), x_host);
    net.forward(tape, n);
    hpf::Buffer<double, Kokkos::DefaultExecutionSpace> dy("dy", Out::size * n), dx("dx", In::size * n);
    const auto dy_host = hpf_test::fill_uniform(dy, 2);
    net.backward(tape, 1.0, hpf::activation_view(dy, Out::channels, n, Out::spatial),
                 hpf::activation_view(dx, In::channels, n, In::spatial));
    std::vector<double> expected(x.size());
    for (std::size_t plane = 0; plane < g.c * n; ++plane) {
      std::vector<long> at(g.out_spatial(), -1);
      const double* in = x.data() + plane * g.in_spatial();
      for_each_window_voxel(g, [&](std::size_t out, std::size_t v) {
        if (at[out] < 0 || in[v] > in[at[out]]) at[out] = long(v);
      });
      for (std::size_t out = 0; out < g.out_spatial(); ++out) {
        expected[plane * g.in_spatial() + std::size_t(at[out])] += dy_host[plane * g.out_spatial() + out];
      }
    }
    return max_difference_of(hpf_test::to_host(dx), expected);
  };
  CHECK(first_maximum_wins(static_cast<MaxUnpadded*>(nullptr), 3) == 0.0);
  CHECK(first_maximum_wins(static_cast<MaxPadded*>(nullptr), 2) == 0.0);
}

TEST_CASE("AvgPool3D: forward is nn.AvgPool3d's, counting padding (count_include_pad)") {
  CHECK(forward_difference<AvgUnpadded>(3, false) < 1e-15);
  CHECK(forward_difference<AvgPadded>(2, false) < 1e-15);
}

TEST_CASE("MaxPool3D and AvgPool3D: finite-difference gradients") {
  SUBCASE("MaxPool3D 2x2x2") { CHECK(hpf_test::gradient_check<MaxUnpadded>(2).worst_input_error < 1e-6); }
  SUBCASE("MaxPool3D 3x3x3, stride 2, pad 1") { CHECK(hpf_test::gradient_check<MaxPadded>(2).worst_input_error < 1e-6); }
  SUBCASE("AvgPool3D 2x2x2") { CHECK(hpf_test::gradient_check<AvgUnpadded>(2).worst_input_error < 1e-6); }
  SUBCASE("AvgPool3D 3x3x3, stride 2, pad 1") { CHECK(hpf_test::gradient_check<AvgPadded>(2).worst_input_error < 1e-6); }
}
