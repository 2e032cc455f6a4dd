#include <hpf/layers/batch_norm.hpp>
#include <hpf/layers/conv3d.hpp>
#include <hpf/model/network.hpp>
#include <hpf/model/sequential.hpp>
#include <hpf/model/summary.hpp>
#include <hpf/zoo/cosmoflow.hpp>

#include <support/fill.hpp>
#include <support/gradient_check.hpp>

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

namespace {
// A convolution's sizes at run time: the direct loops below are written once, not per model.
struct Geometry {
  std::size_t c, d, h, w, o, k, s, p;
  std::size_t od() const { return (d + 2 * p - k) / s + 1; }
  std::size_t oh() const { return (h + 2 * p - k) / s + 1; }
  std::size_t ow() const { return (w + 2 * p - k) / s + 1; }
  std::size_t in_spatial() const { return d * h * w; }
  std::size_t out_spatial() const { return od() * oh() * ow(); }
  // The input voxel under output (z, y, x) at kernel offset (a, b, e), or -1 in the padding.
  long voxel(std::size_t z, std::size_t y, std::size_t x, std::size_t a, std::size_t b, std::size_t e) const {
    const long id = long(z * s + a) - long(p), ih = long(y * s + b) - long(p), iw = long(x * s + e) - long(p);
    if (id < 0 || ih < 0 || iw < 0 || id >= long(d) || ih >= long(h) || iw >= long(w)) return -1;
    return (id * long(h) + ih) * long(w) + iw;
  }
};

template <class Model>
Geometry geometry_of() {
  using In = typename Model::input_shape;
  using Layer = hpf::at_t<typename Model::bound_layers, 0>;
  const auto& g = Layer::geometry;
  return {In::channels, In::depth, In::height, In::width, Model::output_shape::channels, g.kernel(), g.stride(), g.pad()};
}

// PyTorch's conv3d by definition, in double: x [C][N][D*H*W] (hpf's layout), w [O][C][K][K][K].
std::vector<double> direct_forward(const Geometry& g, std::size_t n, const std::vector<double>& x,
                                   const std::vector<double>& w, const std::vector<double>& b) {
  std::vector<double> y(g.o * n * g.out_spatial());
  for (std::size_t o = 0; o < g.o; ++o)
    for (std::size_t j = 0; j < n; ++j)
      for (std::size_t z = 0, out = 0; z < g.od(); ++z)
        for (std::size_t yy = 0; yy < g.oh(); ++yy)
          for (std::size_t xx = 0; xx < g.ow(); ++xx, ++out) {
            double sum = b.empty() ? 0.0 : b[o];
            for (std::size_t c = 0; c < g.c; ++c)
              for (std::size_t a = 0; a < g.k; ++a)
                for (std::size_t bb = 0; bb < g.k; ++bb)
                  for (std::size_t e = 0; e < g.k; ++e) {
                    const long v = g.voxel(z, yy, xx, a, bb, e);
                    if (v < 0) continue;
                    const std::size_t wi = (((o * g.c + c) * g.k + a) * g.k + bb) * g.k + e;
                    sum += w[wi] * x[(c * n + j) * g.in_spatial() + std::size_t(v)];
                  }
            y[(o * n + j) * g.out_spatial() + out] = sum;
          }
  return y;
}

// Its adjoints: dx [C][N][DHW], dw [O][C][K][K][K], db [O] for the output gradient dy.
struct Gradients {
  std::vector<double> dx, dw, db;
};
Gradients direct_backward(const Geometry& g, std::size_t n, const std::vector<double>& x, const std::vector<double>& w,
                          const std::vector<double>& dy) {
  Gradients r{std::vector<double>(x.size()), std::vector<double>(w.size()), std::vector<double>(g.o)};
  for (std::size_t o = 0; o < g.o; ++o)
    for (std::size_t j = 0; j < n; ++j)
      for (std::size_t z = 0, out = 0; z < g.od(); ++z)
        for (std::size_t yy = 0; yy < g.oh(); ++yy)
          for (std::size_t xx = 0; xx < g.ow(); ++xx, ++out) {
            const double grad = dy[(o * n + j) * g.out_spatial() + out];
            r.db[o] += grad;
            for (std::size_t c = 0; c < g.c; ++c)
              for (std::size_t a = 0; a < g.k; ++a)
                for (std::size_t bb = 0; bb < g.k; ++bb)
                  for (std::size_t e = 0; e < g.k; ++e) {
                    const long v = g.voxel(z, yy, xx, a, bb, e);
                    if (v < 0) continue;
                    const std::size_t wi = (((o * g.c + c) * g.k + a) * g.k + bb) * g.k + e;
                    const std::size_t xi = (c * n + j) * g.in_spatial() + std::size_t(v);
                    r.dw[wi] += grad * x[xi];
                    r.dx[xi] += grad * w[wi];
                  }
          }
  return r;
}

// max |a - b| / max |b|: sums over a batch's volumes grow with it, and so do their rounding errors.
double max_difference(const std::vector<double>& a, const std::vector<double>& b) {
  REQUIRE(a.size() == b.size());
  double worst = 0, scale = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    worst = std::max(worst, std::abs(a[i] - b[i]));
    scale = std::max(scale, std::abs(b[i]));
  }
  return scale > 0 ? worst / scale : worst;
}

template <class V>
std::vector<double> as_double(const V& v) {
  return std::vector<double>(v.begin(), v.end());
}

// y, dx, dW and db of Model (one Conv3D) on n samples: hpf's in T (`algorithm`: how float runs on
// the host), and the direct loops' in double from the same inputs and parameters (T's values).
struct Results {
  std::vector<std::vector<double>> hpf, direct;
};
template <class Model, class T = double>
Results run_against_direct_loops(std::size_t n, hpf::ConvolutionAlgorithm algorithm = hpf::ConvolutionAlgorithm::automatic) {
  const Geometry g = geometry_of<Model>();
  hpf::Network<Model, T> net(hpf::NetworkOptions{.seed = 7, .convolution = algorithm});
  CHECK(net.tensor("0.weight").dims == std::vector<std::size_t>{g.o, g.c, g.k, g.k, g.k});
  const bool bias = net.tensors().size() > 1;
  if (bias) CHECK(net.tensor("0.bias").dims == std::vector<std::size_t>{g.o});
  if (bias) net.write(net.tensor("0.bias"), std::vector<T>(g.o, T(0.25)));  // non-zero, so that it matters
  auto tape = net.make_tape(n);
  hpf_test::fill_uniform(net.input(tape, n), 3);
  const auto x = hpf_test::to_host(net.input(tape, n));
  net.forward(tape, n);
  const auto w = as_double(net.read(net.tensor("0.weight")));
  const auto b = bias ? as_double(net.read(net.tensor("0.bias"))) : std::vector<double>{};
  Results r;
  r.hpf.push_back(hpf_test::to_host(net.output(tape)));
  r.direct.push_back(direct_forward(g, n, x, w, b));

  using In = typename Model::input_shape;
  using Out = typename Model::output_shape;
  hpf::Buffer<T, Kokkos::DefaultExecutionSpace> dy("dy", Out::size * n), dx("dx", In::size * n);
  hpf_test::fill_uniform(dy, 4);
  net.zero_grad();
  net.backward(tape, T(1), hpf::activation_view(dy, Out::channels, n, Out::spatial),
               hpf::activation_view(dx, In::channels, n, In::spatial));
  Gradients expected = direct_backward(g, n, x, w, hpf_test::to_host(dy));
  if (!bias) expected.db.clear();
  r.hpf.push_back(hpf_test::to_host(dx));
  r.hpf.push_back(as_double(net.read(net.tensor("0.weight"), /*gradient=*/true)));
  r.hpf.push_back(bias ? as_double(net.read(net.tensor("0.bias"), /*gradient=*/true)) : std::vector<double>{});
  r.direct.insert(r.direct.end(), {expected.dx, expected.dw, expected.db});
  return r;
}

// Forward and backward of Model (one Conv3D) on n samples in double against the direct loops:
// the largest differences of y, dx, dW and db, relative to the largest value of each.
template <class Model>
std::vector<double> compare_with_direct_loops(std::size_t n) {
  const Results r = run_against_direct_loops<Model>(n);
  std::vector<double> result;
  for (std::size_t i = 0; i < r.hpf.size(); ++i) result.push_back(max_difference(r.hpf[i], r.direct[i]));
  return result;
}

// The models: each is checked against the direct loops and by finite differences.
using Padded = hpf::Sequential<hpf::Input<2, 5, 4, 6>, hpf::Conv3D<3, 3, hpf::Pad<1>>>;
using Strided = hpf::Sequential<hpf::Input<2, 7, 6, 5>, hpf::Conv3D<2, 3, hpf::Stride<2>, hpf::Pad<1>, hpf::NoBias>>;
using Pointwise = hpf::Sequential<hpf::Input<3, 3, 4, 2>, hpf::Conv3D<2, 1>>;
using Kernel4 = hpf::Sequential<hpf::Input<1, 6, 8, 7>, hpf::Conv3D<2, 4, hpf::Stride<3>>>;  // unpadded, stride 3
// 108 x 4096 columns per volume: a chunk of one volume each (detail::samples_per_chunk), so a
// batch of 3 runs three chunks and their weight gradients add up.
using Chunked = hpf::Sequential<hpf::Input<4, 16, 16, 16>, hpf::Conv3D<4, 3, hpf::Pad<1>>>;
}  // namespace

TEST_CASE("Conv3D: output shapes, constexpr costs, description") {
  using M = hpf::Sequential<hpf::Input<2, 6, 5, 4>, hpf::Conv3D<3, 3, hpf::Pad<1>, hpf::NoBias>,
                            hpf::Conv3D<4, 3, hpf::Stride<2>, hpf::Pad<1>>>;
  static_assert(std::is_same_v<hpf::at_t<M::bound_layers, 0>::output_shape, hpf::Shape<3, 6, 5, 4>>);
  static_assert(std::is_same_v<M::output_shape, hpf::Shape<4, 3, 3, 2>>);
  static_assert(M::layer_costs[0].parameters == 3 * 2 * 27);
  static_assert(M::layer_costs[0].forward_flops == 2 * 3 * 54 * 120);
  static_assert(M::layer_costs[0].macs == 3 * 54 * 120);
  static_assert(M::layer_costs[1].parameters == 4 * 3 * 27 + 4);
  static_assert(M::layer_costs[1].backward_flops == 4 * 4 * 81 * 18 + 4 * 18);
  static_assert(M::layer_costs[1].activations == 4 * 18);
  static_assert(std::is_same_v<hpf::Sequential<hpf::Input<1, 4, 4, 4>, hpf::Conv3D<2, 4>>::output_shape,
                               hpf::Shape<2, 1, 1, 1>>);
  CHECK(hpf::at_t<M::bound_layers, 0>::describe() == "Conv3D(2 -> 3, 3x3x3, pad 1, no bias)");
  CHECK(hpf::at_t<M::bound_layers, 1>::describe() == "Conv3D(3 -> 4, 3x3x3, stride 2, pad 1)");
}

TEST_CASE("Conv3D: forward and backward match nn.Conv3d's definition in direct loops") {
  // Parameter names and dims are PyTorch's (checked inside): "0.weight" [O, C, K, K, K], "0.bias" [O].
  const auto check = [](const std::vector<double>& worst) {
    CHECK(worst[0] < 1e-13);  // y
    CHECK(worst[1] < 1e-13);  // dx
    CHECK(worst[2] < 1e-13);  // dW: sums over the batch and the output volume
    CHECK(worst[3] < 1e-13);  // db
  };
  SUBCASE("3x3x3, pad 1") { check(compare_with_direct_loops<Padded>(3)); }
  SUBCASE("3x3x3, stride 2, pad 1, no bias") { check(compare_with_direct_loops<Strided>(2)); }
  SUBCASE("1x1x1 (the input itself is the column matrix)") { check(compare_with_direct_loops<Pointwise>(4)); }
  SUBCASE("4x4x4, stride 3, unpadded") { check(compare_with_direct_loops<Kernel4>(2)); }
  SUBCASE("a batch in three chunks") { check(compare_with_direct_loops<Chunked>(3)); }
}

TEST_CASE("Conv3D: finite-difference gradients") {
  const auto check = [](const hpf_test::GradientCheckResult& r) {
    CHECK(r.worst_input_error < 1e-6);
    CHECK(r.worst_parameter_error < 1e-6);
  };
  SUBCASE("3x3x3, pad 1") { check(hpf_test::gradient_check<Padded>(2)); }
  SUBCASE("3x3x3, stride 2, pad 1, no bias") { check(hpf_test::gradient_check<Strided>(2)); }
  SUBCASE("1x1x1") { check(hpf_test::gradient_check<Pointwise>(2)); }
  SUBCASE("4x4x4, stride 3") { check(hpf_test::gradient_check<Kernel4>(2)); }
}

TEST_CASE("BatchNorm on volumes is BatchNorm3d: statistics per channel over N*D*H*W") {
  constexpr std::size_t C = 2, N = 3, S = 3 * 4 * 5;
  using M = hpf::Sequential<hpf::Input<2, 3, 4, 5>, hpf::BatchNorm>;
  hpf::Network<M, double> net;
  CHECK(net.tensor("0.weight").dims == std::vector<std::size_t>{C});
  CHECK(net.tensor("0.running_mean").dims == std::vector<std::size_t>{C});
  auto tape = net.make_tape(N);
  const auto x = hpf_test::fill_uniform(net.input(tape, N), 5, 1.0, 3.0);
  net.forward(tape, N);
  const auto y = hpf_test::to_host(net.output(tape));
  const auto running_var = net.read(net.tensor("0.running_var"));
  for (std::size_t c = 0; c < C; ++c) {
    double mean = 0, var = 0;
    for (std::size_t i = 0; i < N * S; ++i) mean += x[c * N * S + i] / (N * S);
    for (std::size_t i = 0; i < N * S; ++i) var += std::pow(x[c * N * S + i] - mean, 2) / (N * S);
    double worst = 0;
    for (std::size_t i = 0; i < N * S; ++i) {
      worst = std::max(worst, std::abs(y[c * N * S + i] - (x[c * N * S + i] - mean) / std::sqrt(var + 1e-5)));
    }
    CHECK(worst < 1e-13);
    CHECK(running_var[c] == doctest::Approx(0.9 + 0.1 * var * (N * S) / (N * S - 1.0)).epsilon(1e-13));
  }
  const auto r = hpf_test::gradient_check<M>(3);
  CHECK(r.worst_input_error < 1e-6);
  CHECK(r.worst_parameter_error < 1e-6);
}

TEST_CASE("CosmoFlow: the zoo model's shapes and costs") {
  using M = hpf::zoo::CosmoFlow<>;
  static_assert(std::is_same_v<M::input_shape, hpf::Shape<4, 32, 32, 32>>);
  static_assert(std::is_same_v<M::output_shape, hpf::Shape<4>>);
  static_assert(M::trainable);
  // Convolutions (weights and biases), then 64 x 4^3 = 4096 flattened features into 128, 64, 4.
  static_assert(M::cost.parameters == (16 * 4 * 27 + 16) + (32 * 16 * 27 + 32) + (64 * 32 * 27 + 64) +
                                          (128 * 4096 + 128) + (64 * 128 + 64) + (4 * 64 + 4));
  static_assert(M::layer_costs[2].saved_indices == 16 * 16 * 16 * 16);  // the first pooling's argmax
  using Small = hpf::zoo::CosmoFlow<8, 2, 3>;
  static_assert(std::is_same_v<hpf::at_t<Small::bound_layers, 8>::output_shape, hpf::Shape<64, 1, 1, 1>>);
  static_assert(std::is_same_v<Small::output_shape, hpf::Shape<3>>);
  const std::string text = hpf::summary<Small>(2);
  CHECK(text.find("Conv3D(2 -> 16, 3x3x3, pad 1)") != std::string::npos);
  CHECK(text.find("MaxPool3D(2x2x2)") != std::string::npos);
}

TEST_CASE("Conv3D: float on the host runs oneDNN where built; double and ConvolutionAlgorithm::gemm vol2col + GEMM") {
  using M = hpf::Sequential<hpf::Input<2, 4, 4, 4>, hpf::Conv3D<3, 3, hpf::Pad<1>>>;
  static std::vector<std::string> regions;
  const auto gemm_ran = [](auto&& net) {
    regions.clear();
    Kokkos::Tools::Experimental::set_push_region_callback([](const char* name) { regions.emplace_back(name); });
    auto tape = net.make_tape(2);
    net.forward(tape, 2);
    Kokkos::Tools::Experimental::set_push_region_callback(nullptr);
    return std::any_of(regions.begin(), regions.end(),
                       [](const std::string& r) { return r.find("KokkosBlas::gemm") != std::string::npos; });
  };
  CHECK(gemm_ran(hpf::Network<M, double>()));
  CHECK(gemm_ran(hpf::Network<M, float>(hpf::NetworkOptions{.convolution = hpf::ConvolutionAlgorithm::gemm})));
  CHECK(gemm_ran(hpf::Network<M, float>()) == !HPF_ENABLE_ONEDNN);
}

TEST_CASE("Conv3D: float (oneDNN where built) within float rounding of double's direct loops and of vol2col") {
  // Padded volumes reach oneDNN's weight gradient padded in depth by hpf (ConvolutionShape::
  // depth_padded), also where the windows leave slices behind.
  const auto check = [](const Results& vendor, const Results& gemm) {
    for (std::size_t r = 0; r < vendor.hpf.size(); ++r) {
      INFO("result ", r, " (y, dx, dW, db)");
      CHECK(max_difference(vendor.hpf[r], vendor.direct[r]) < 4e-6);
      CHECK(max_difference(gemm.hpf[r], gemm.direct[r]) < 4e-6);
      CHECK(max_difference(vendor.hpf[r], gemm.hpf[r]) < 6e-6);
    }
  };
  constexpr auto gemm = hpf::ConvolutionAlgorithm::gemm;
  SUBCASE("3x3x3, pad 1") {
    check(run_against_direct_loops<Padded, float>(3), run_against_direct_loops<Padded, float>(3, gemm));
  }
  SUBCASE("3x3x3, stride 2, pad 1, no bias") {
    check(run_against_direct_loops<Strided, float>(2), run_against_direct_loops<Strided, float>(2, gemm));
  }
  SUBCASE("1x1x1") {
    check(run_against_direct_loops<Pointwise, float>(4), run_against_direct_loops<Pointwise, float>(4, gemm));
  }
  SUBCASE("4x4x4, stride 3, unpadded") {
    check(run_against_direct_loops<Kernel4, float>(2), run_against_direct_loops<Kernel4, float>(2, gemm));
  }
  SUBCASE("16^3, 4 -> 4 channels, a batch of 3") {
    check(run_against_direct_loops<Chunked, float>(3), run_against_direct_loops<Chunked, float>(3, gemm));
  }
  SUBCASE("3x3x3, stride 3, pad 1: the windows leave the last slices behind") {
    using Cropped = hpf::Sequential<hpf::Input<2, 9, 7, 4>, hpf::Conv3D<3, 3, hpf::Stride<3>, hpf::Pad<1>>>;
    check(run_against_direct_loops<Cropped, float>(2), run_against_direct_loops<Cropped, float>(2, gemm));
  }
  SUBCASE("CosmoFlow's second convolution: 16 -> 32 channels on 8^3, blocked layouts") {
    using Wide = hpf::Sequential<hpf::Input<16, 8, 8, 8>, hpf::Conv3D<32, 3, hpf::Pad<1>>>;
    check(run_against_direct_loops<Wide, float>(3), run_against_direct_loops<Wide, float>(3, gemm));
  }
}

#if HPF_ENABLE_ONEDNN
namespace {
// y, dx and the weight and bias gradients (added to 0.25's: micro-batches accumulate) of a
// OneDnnConvolution over volumes, for n samples [C][n][DHW] with `lanes` weight-gradient lanes.
struct VendorResults {
  std::vector<float> y, dx, grads;
};
VendorResults vendor_results(const hpf::detail::VolumeGeometry& g, std::size_t out, std::size_t n,
                             const std::vector<float>& x, const std::vector<float>& dy, std::size_t lanes = 1) {
  hpf::detail::OneDnnConvolution conv(g, out, /*bias=*/true, std::make_shared<hpf::detail::OneDnnDevice>(), lanes);
  std::vector<float> weight(out * g.patch()), bias(out, 0.5f);
  for (std::size_t i = 0; i < weight.size(); ++i) weight[i] = static_cast<float>((i * 37) % 101) / 50.0f - 1.0f;
  VendorResults r{std::vector<float>(out * n * g.out_spatial()), std::vector<float>(x.size()),
                  std::vector<float>(out * g.patch() + out, 0.25f)};
  std::vector<float> scratch(conv.workspace(n));
  conv.forward(x.data(), weight.data(), bias.data(), r.y.data(), n, scratch.data());
  conv.backward(Kokkos::DefaultHostExecutionSpace(), x.data(), weight.data(), dy.data(), r.dx.data(), r.grads.data(),
                r.grads.data() + out * g.patch(), n, scratch.data());
  return r;
}
std::vector<float> pattern(std::size_t size, std::size_t step) {
  std::vector<float> v(size);
  for (std::size_t i = 0; i < size; ++i) v[i] = static_cast<float>((i * step) % 1000) / 500.0f - 1.0f;
  return v;
}
// Sample j of a [C][n][S] batch, as a batch of one.
std::vector<float> sample(const std::vector<float>& batch, std::size_t channels, std::size_t n, std::size_t j) {
  const std::size_t s = batch.size() / (channels * n);
  std::vector<float> one;
  for (std::size_t c = 0; c < channels; ++c)
    one.insert(one.end(), batch.begin() + static_cast<long>((c * n + j) * s), batch.begin() + static_cast<long>((c * n + j + 1) * s));
  return one;
}
}  // namespace

TEST_CASE("Conv3D: oneDNN's bits do not depend on the batch, the threads or the lanes") {
  // What bitwise equivalence across layouts needs: a sample's y and dx are the same bits alone as
  // in a batch and on any number of oneDNN's threads, and a batch's weight gradient the same bits
  // for any number of lanes (each runs oneDNN on one thread: with several, oneDNN may split a
  // sub-batch's sum over them, as it does for 3 -> 5 channels on images). CosmoFlow's first and
  // second convolutions (plain and blocked input layouts) and a strided one; 19 samples: 19
  // sub-batches of one volume in 3 groups.
  hpf::detail::VolumeGeometry g(4, 8, 8, 8, 3, 1, 1);
  std::size_t out = 16;
  SUBCASE("4 -> 16") {}
  SUBCASE("16 -> 32") {
    g = hpf::detail::VolumeGeometry(16, 4, 4, 4, 3, 1, 1);
    out = 32;
  }
  SUBCASE("2 -> 5, stride 2") {
    g = hpf::detail::VolumeGeometry(2, 7, 6, 5, 3, 2, 1);
    out = 5;
  }
  constexpr std::size_t n = 3, many = 19;
  const auto x = pattern(g.channels() * many * g.in_spatial(), 7919);
  const auto dy = pattern(out * many * g.out_spatial(), 104729);
  const auto x3 = pattern(g.channels() * n * g.in_spatial(), 7919), dy3 = pattern(out * n * g.out_spatial(), 104729);
  const VendorResults batch = vendor_results(g, out, n, x3, dy3);
  for (std::size_t j = 0; j < n; ++j) {
    INFO("sample ", j);
    const VendorResults alone = vendor_results(g, out, 1, sample(x3, g.channels(), n, j), sample(dy3, out, n, j));
    CHECK(alone.y == sample(batch.y, out, n, j));
    CHECK(alone.dx == sample(batch.dx, g.channels(), n, j));
  }
  const VendorResults all_threads = vendor_results(g, out, many, x, dy);
  hpf::detail::OneDnnOnOneThread one_thread;
  const VendorResults one = vendor_results(g, out, many, x, dy);
  CHECK(one.y == all_threads.y);
  CHECK(one.dx == all_threads.dx);
  CHECK(vendor_results(g, out, many, x, dy, 2).grads == one.grads);
  CHECK(vendor_results(g, out, many, x, dy, 3).grads == one.grads);
}
#endif
