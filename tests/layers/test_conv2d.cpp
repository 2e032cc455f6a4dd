#include <hpf/layers/conv2d.hpp>
#include <hpf/model/network.hpp>
#include <hpf/model/sequential.hpp>

#include <support/fill.hpp>
#include <support/gradient_check.hpp>

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <string>
#include <vector>

namespace {
// Naive NCHW convolution on host, for checking the GEMM formulation.
template <std::size_t C, std::size_t H, std::size_t W, std::size_t O, std::size_t K, std::size_t S, std::size_t P>
std::vector<double> reference_conv(const std::vector<double>& x /*[C][N][HW]*/, std::size_t n,
                                   const std::vector<double>& w /*OIHW*/, const std::vector<double>& b) {
  constexpr std::size_t OH = (H + 2 * P - K) / S + 1, OW = (W + 2 * P - K) / S + 1;
  std::vector<double> y(O * n * OH * OW);
  for (std::size_t o = 0; o < O; ++o)
    for (std::size_t j = 0; j < n; ++j)
      for (std::size_t oh = 0; oh < OH; ++oh)
        for (std::size_t ow = 0; ow < OW; ++ow) {
          double sum = b.empty() ? 0.0 : b[o];
          for (std::size_t c = 0; c < C; ++c)
            for (std::size_t kh = 0; kh < K; ++kh)
              for (std::size_t kw = 0; kw < K; ++kw) {
                const long ih = long(oh * S + kh) - long(P), iw = long(ow * S + kw) - long(P);
                if (ih < 0 || iw < 0 || ih >= long(H) || iw >= long(W)) continue;
                sum += w[((o * C + c) * K + kh) * K + kw] * x[(c * n + j) * H * W + ih * W + iw];
              }
          y[(o * n + j) * OH * OW + oh * OW + ow] = sum;
        }
  return y;
}

template <std::size_t C, std::size_t H, std::size_t W, std::size_t O, std::size_t K, std::size_t S, std::size_t P,
          class... Extra>
void check_forward(std::size_t n) {
  using M = hpf::Sequential<hpf::Input<C, H, W>, hpf::Conv2D<O, K, hpf::Stride<S>, hpf::Pad<P>, Extra...>>;
  hpf::Network<M, double> net(hpf::NetworkOptions{.seed = 7});
  auto tape = net.make_tape(n);
  hpf::Rng rng(3);
  std::vector<double> x(C * n * H * W);
  for (double& v : x) v = rng.uniform(-1, 1);
  auto x_host = Kokkos::create_mirror_view(net.input(tape, n));
  for (std::size_t i = 0; i < x.size(); ++i) x_host.data()[i] = x[i];
  Kokkos::deep_copy(net.input(tape, n), x_host);
  net.forward(tape, n);
  const auto w = net.read(net.tensor("0.weight"));
  const auto b = M::bound_layers::size && hpf::Conv2D<O, K, Extra...>::has_bias ? net.read(net.tensor("0.bias"))
                                                                                : std::vector<double>{};
  const auto expected = reference_conv<C, H, W, O, K, S, P>(x, n, w, b);
  auto y = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, net.output(tape));
  REQUIRE(y.size() == expected.size());
  double worst = 0;
  for (std::size_t i = 0; i < expected.size(); ++i) worst = std::max(worst, std::abs(y.data()[i] - expected[i]));
  CHECK(worst < 1e-12);
}
}  // namespace

TEST_CASE("Conv2D: output shape, constexpr costs and PyTorch tensor layout") {
  using M = hpf::Sequential<hpf::Input<3, 32, 32>, hpf::Conv2D<16, 3, hpf::Pad<1>, hpf::NoBias>,
                            hpf::Conv2D<32, 3, hpf::Stride<2>, hpf::Pad<1>>>;
  static_assert(std::is_same_v<M::output_shape, hpf::Shape<32, 16, 16>>);
  static_assert(M::layer_costs[0].parameters == 16 * 3 * 9);
  static_assert(M::layer_costs[0].forward_flops == 2 * 16 * 27 * 1024);
  static_assert(M::layer_costs[1].parameters == 32 * 16 * 9 + 32);
  hpf::Network<M> net;
  CHECK(net.tensor("0.weight").dims == std::vector<std::size_t>{16, 3, 3, 3});
  CHECK(net.tensor("1.weight").dims == std::vector<std::size_t>{32, 16, 3, 3});
  CHECK(net.tensor("1.bias").dims == std::vector<std::size_t>{32});
}

TEST_CASE("Conv2D: forward matches a direct convolution") {
  check_forward<3, 7, 6, 4, 3, 1, 1>(3);                // padded 3x3, odd sizes
  check_forward<2, 9, 9, 5, 3, 2, 1>(2);                // strided
  check_forward<4, 5, 5, 3, 1, 1, 0>(4);                // pointwise fast path
  check_forward<4, 6, 6, 3, 1, 2, 0, hpf::NoBias>(3);   // strided 1x1 (projection shortcut)
  check_forward<1, 8, 8, 2, 5, 1, 2>(2);                // 5x5, pad 2
  check_forward<2, 6, 7, 3, 4, 3, 0>(2);                // kernel 4, stride 3, no pad
}

TEST_CASE("Conv2D: finite-difference gradients") {
  SUBCASE("3x3 pad 1") {
    auto r = hpf_test::gradient_check<hpf::Sequential<hpf::Input<2, 5, 4>, hpf::Conv2D<3, 3, hpf::Pad<1>>>>(2);
    CHECK(r.worst_input_error < 1e-6);
    CHECK(r.worst_parameter_error < 1e-6);
  }
  SUBCASE("3x3 stride 2 pad 1 no bias") {
    auto r = hpf_test::gradient_check<
        hpf::Sequential<hpf::Input<2, 7, 7>, hpf::Conv2D<3, 3, hpf::Stride<2>, hpf::Pad<1>, hpf::NoBias>>>(3);
    CHECK(r.worst_input_error < 1e-6);
    CHECK(r.worst_parameter_error < 1e-6);
  }
  SUBCASE("1x1 pointwise") {
    auto r = hpf_test::gradient_check<hpf::Sequential<hpf::Input<4, 3, 3>, hpf::Conv2D<2, 1>>>(3);
    CHECK(r.worst_input_error < 1e-6);
    CHECK(r.worst_parameter_error < 1e-6);
  }
  SUBCASE("5x5 stride 3 pad 2") {
    auto r = hpf_test::gradient_check<
        hpf::Sequential<hpf::Input<1, 8, 9>, hpf::Conv2D<2, 5, hpf::Stride<3>, hpf::Pad<2>>>>(2);
    CHECK(r.worst_input_error < 1e-6);
    CHECK(r.worst_parameter_error < 1e-6);
  }
}

TEST_CASE("Conv2D: GEMMs reach the vendor BLAS (no native fallback)") {
  static std::vector<std::string> regions;
  regions.clear();
  Kokkos::Tools::Experimental::set_push_region_callback([](const char* name) { regions.emplace_back(name); });
  using M = hpf::Sequential<hpf::Input<3, 8, 8>, hpf::Conv2D<4, 3, hpf::Pad<1>>>;
  // The im2col + GEMM path (also the one of devices and double).
  hpf::Network<M> net(hpf::NetworkOptions{.convolution = hpf::ConvolutionAlgorithm::gemm});
  auto tape = net.make_tape(2);
  Kokkos::deep_copy(net.input(tape, 2), 1.0f);
  net.forward(tape, 2);
  Kokkos::Tools::Experimental::set_push_region_callback(nullptr);
  bool saw_gemm = false;
  for (const auto& r : regions) {
    if (r.find("KokkosBlas::gemm") != std::string::npos) {
      saw_gemm = true;
      CHECK_MESSAGE(r.find("TPL") != std::string::npos, "gemm took the native path: ", r);
    }
  }
  CHECK(saw_gemm);
}

#if HPF_ENABLE_ONEDNN
namespace {
// Forward output, input gradient and accumulated parameter gradients of one float network, over
// two micro-batches (gradients add up) of n samples each.
template <class Model>
std::vector<std::vector<double>> float_results(std::size_t n, hpf::ConvolutionAlgorithm algorithm) {
  hpf::Network<Model, float> net(hpf::NetworkOptions{.seed = 5, .convolution = algorithm});
  auto tape = net.make_tape(n);
  using In = typename Model::input_shape;
  using Out = typename Model::output_shape;
  hpf::Buffer<float, Kokkos::DefaultExecutionSpace> dy("dy", Out::size * n), dx("dx", In::size * n);
  std::vector<std::vector<double>> results;
  for (std::uint64_t micro = 0; micro < 2; ++micro) {
    hpf_test::fill_uniform(net.input(tape, n), 10 + micro);
    hpf_test::fill_uniform(dy, 20 + micro);
    net.forward(tape, n);
    net.backward(tape, 1.0f, hpf::activation_view(dy, Out::channels, n, Out::spatial),
                 hpf::activation_view(dx, In::channels, n, In::spatial));
    results.push_back(hpf_test::to_host(net.output(tape)));
    results.push_back(hpf_test::to_host(dx));
  }
  for (const auto& t : net.tensors()) {
    const auto g = net.read(t, /*gradient=*/true);
    results.emplace_back(g.begin(), g.end());
  }
  return results;
}

/// oneDNN's convolutions (`algorithm`: automatic, with Winograd's where it runs, or direct)
/// against im2col + GEMM.
template <class Model>
void check_onednn_against_gemm(std::size_t n, hpf::ConvolutionAlgorithm algorithm = hpf::ConvolutionAlgorithm::automatic) {
  const auto vendor = float_results<Model>(n, algorithm);
  const auto gemm = float_results<Model>(n, hpf::ConvolutionAlgorithm::gemm);
  REQUIRE(vendor.size() == gemm.size());
  for (std::size_t r = 0; r < vendor.size(); ++r) {
    double scale = 0, diff = 0;
    for (std::size_t i = 0; i < gemm[r].size(); ++i) {
      scale = std::max(scale, std::abs(gemm[r][i]));
      diff = std::max(diff, std::abs(vendor[r][i] - gemm[r][i]));
    }
    INFO("result ", r, " (outputs, input gradients, then parameter gradients), n = ", n,
         ", direct only: ", algorithm == hpf::ConvolutionAlgorithm::direct);
    CHECK(diff <= 2e-5 * scale);
  }
}

/// Whether oneDNN runs AVX-512 kernels on this CPU (its Winograd convolutions need them).
bool onednn_has_avx512() {
  const auto isa = static_cast<unsigned>(dnnl::get_effective_cpu_isa());
  const auto avx512 = static_cast<unsigned>(dnnl::cpu_isa::avx512_core);
  return (isa & avx512) == avx512;
}
}  // namespace

namespace {
/// Weight and bias gradients of OneDnnConvolution with `lanes` lanes for a batch of n (oneDNN on
/// one thread: the lanes' own setting, so that lanes = 1 makes the same primitives).
std::vector<float> lane_gradients(const hpf::detail::WindowGeometry& g, std::size_t out, std::size_t n,
                                  std::size_t lanes, const std::vector<float>& x, const std::vector<float>& dy,
                                  dnnl::memory::data_type compute = dnnl::memory::data_type::f32) {
  hpf::detail::OneDnnOnOneThread one_thread;
  hpf::detail::OneDnnConvolution conv(g, out, /*bias=*/true, std::make_shared<hpf::detail::OneDnnDevice>(), lanes,
                                      /*winograd=*/true, compute);
  std::vector<float> weight(out * g.patch(), 0.5f), gradients(out * g.patch() + out, 0.25f);  // gradients accumulate
  std::vector<float> scratch(conv.workspace(n) + 16);
  conv.backward(Kokkos::DefaultHostExecutionSpace(), x.data(), weight.data(), dy.data(), nullptr, gradients.data(),
                gradients.data() + out * g.patch(), n, scratch.data());
  return gradients;
}
}  // namespace

TEST_CASE("Conv2D: oneDNN weight gradients are the same bits for any number of lanes") {
  // 8x8 outputs: sub-batches of 4 images; 37 images: 10 sub-batches (the last of 1 image) in 2
  // groups, so lanes share groups unevenly and a remainder sub-batch has its own primitives.
  // 3 -> 5 channels run the direct convolution; 32 -> 32 Winograd's, where the CPU has it.
  std::size_t in = 3, out = 5;
  SUBCASE("direct") {}
  SUBCASE("Winograd") { in = out = 32; }
  const hpf::detail::WindowGeometry g(in, 8, 8, 3, 1, 1);
  constexpr std::size_t n = 37;
  std::vector<float> x(g.channels * n * g.in_spatial()), dy(out * n * g.out_spatial());
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>((i * 7919) % 1000) / 500.0f - 1.0f;
  for (std::size_t i = 0; i < dy.size(); ++i) dy[i] = static_cast<float>((i * 104729) % 1000) / 500.0f - 1.0f;
  const auto one = lane_gradients(g, out, n, 1, x, dy);
  CHECK(lane_gradients(g, out, n, 2, x, dy) == one);
  CHECK(lane_gradients(g, out, n, 3, x, dy) == one);
  // And they are the gradients: a direct sum in double, plus what the buffers held.
  double worst = 0;
  for (std::size_t o = 0; o < out; ++o) {
    for (std::size_t c = 0; c < g.channels; ++c) {
      for (std::size_t ky = 0; ky < 3; ++ky) {
        for (std::size_t kx = 0; kx < 3; ++kx) {
          double sum = 0.25;
          for (std::size_t j = 0; j < n; ++j) {
            for (std::size_t oy = 0; oy < 8; ++oy) {
              for (std::size_t ox = 0; ox < 8; ++ox) {
                const long iy = static_cast<long>(oy + ky) - 1, ix = static_cast<long>(ox + kx) - 1;
                if (iy < 0 || ix < 0 || iy >= 8 || ix >= 8) continue;
                sum += double(dy[(o * n + j) * 64 + oy * 8 + ox]) * double(x[(c * n + j) * 64 + static_cast<std::size_t>(iy * 8 + ix)]);
              }
            }
          }
          worst = std::max(worst, std::abs(sum - double(one[o * g.patch() + (c * 3 + ky) * 3 + kx])));
        }
      }
    }
    double bias = 0.25;
    for (std::size_t i = 0; i < n * 64; ++i) bias += dy[o * n * 64 + i];
    worst = std::max(worst, std::abs(bias - double(one[out * g.patch() + o])));
  }
  CHECK(worst < 1e-3);
}

TEST_CASE("Conv2D: oneDNN's bf16 weight gradients are the same bits for any number of lanes") {
  // bf16 sub-batches of about 8192 output pixels, one per group: 32x32 outputs, 37 images: 5
  // sub-batches of 8, 8, 8, 8 and 5 images. In float where oneDNN has no bf16 kernel here.
  const hpf::detail::WindowGeometry g(16, 32, 32, 3, 1, 1);
  constexpr std::size_t out = 16, n = 37;
  const hpf::detail::OneDnnDevice device;
  const bool bf16 = hpf::detail::OneDnnConvolution::available(g, out, true, dnnl::memory::data_type::bf16, device.engine);
  const auto compute = bf16 ? dnnl::memory::data_type::bf16 : dnnl::memory::data_type::f32;
  std::vector<float> x(g.channels * n * g.in_spatial()), dy(out * n * g.out_spatial());
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>((i * 7919) % 1000) / 500.0f - 1.0f;
  for (std::size_t i = 0; i < dy.size(); ++i) dy[i] = static_cast<float>((i * 104729) % 1000) / 500.0f - 1.0f;
  const auto one = lane_gradients(g, out, n, 1, x, dy, compute);
  CHECK(lane_gradients(g, out, n, 2, x, dy, compute) == one);
  CHECK(lane_gradients(g, out, n, 3, x, dy, compute) == one);
  CHECK(std::count(one.begin(), one.end(), 0.25f) == 0);  // every gradient was added to what the buffer held
}

TEST_CASE("Conv2D: oneDNN (float on the host) agrees with the im2col + GEMM path") {
  check_onednn_against_gemm<hpf::Sequential<hpf::Input<3, 9, 8>, hpf::Conv2D<16, 3, hpf::Pad<1>>>>(4);
  check_onednn_against_gemm<hpf::Sequential<hpf::Input<3, 9, 8>, hpf::Conv2D<16, 3, hpf::Pad<1>>>>(3);  // odd batch
  check_onednn_against_gemm<hpf::Sequential<hpf::Input<16, 8, 8>, hpf::Conv2D<32, 3, hpf::Stride<2>, hpf::Pad<1>, hpf::NoBias>>>(5);
  check_onednn_against_gemm<hpf::Sequential<hpf::Input<8, 6, 6>, hpf::Conv2D<4, 1>>>(2);
  check_onednn_against_gemm<hpf::Sequential<hpf::Input<8, 6, 6>, hpf::Conv2D<16, 1, hpf::Stride<2>, hpf::NoBias>>>(2);
  check_onednn_against_gemm<hpf::Sequential<hpf::Input<2, 11, 10>, hpf::Conv2D<5, 5, hpf::Stride<3>, hpf::Pad<2>>>>(3);
  check_onednn_against_gemm<hpf::Sequential<hpf::Input<2, 7, 9>, hpf::Conv2D<3, 4, hpf::Stride<3>>>>(2);
  // Winograd's algorithm where the CPU has it (odd sizes: partial tiles), and the direct one.
  using Wide = hpf::Sequential<hpf::Input<32, 7, 6>, hpf::Conv2D<48, 3, hpf::Pad<1>>>;
  check_onednn_against_gemm<Wide>(3);
  check_onednn_against_gemm<Wide>(3, hpf::ConvolutionAlgorithm::direct);
  check_onednn_against_gemm<hpf::Sequential<hpf::Input<32, 8, 8>, hpf::Conv2D<32, 3, hpf::Pad<1>, hpf::NoBias>>>(2);
}

TEST_CASE("Conv2D: Winograd's algorithm runs the 3x3 stride-1 layers of 32 or more channels, where oneDNN has it") {
  const auto device = std::make_shared<hpf::detail::OneDnnDevice>();
  const auto winograd = [&](std::size_t in, std::size_t out, std::size_t kernel, std::size_t stride, bool asked = true) {
    return hpf::detail::OneDnnConvolution(hpf::detail::WindowGeometry(in, 16, 16, kernel, stride, kernel / 2), out,
                                          /*bias=*/false, device, 1, asked)
        .winograd();
  };
  const bool available = onednn_has_avx512();
  INFO("oneDNN's CPU ISA: ", static_cast<unsigned>(dnnl::get_effective_cpu_isa()));
  CHECK(winograd(32, 32, 3, 1) == available);
  CHECK(winograd(64, 64, 3, 1) == available);
  CHECK(winograd(32, 48, 3, 1) == available);
  CHECK_FALSE(winograd(16, 16, 3, 1));  // the tile transforms would cost more than they save
  CHECK_FALSE(winograd(16, 32, 3, 1));
  CHECK_FALSE(winograd(3, 32, 3, 1));
  CHECK_FALSE(winograd(32, 32, 3, 2));  // strided: no Winograd kernel
  CHECK_FALSE(winograd(32, 32, 1, 1));
  CHECK_FALSE(winograd(32, 32, 5, 1));
  CHECK_FALSE(winograd(32, 32, 3, 1, /*asked=*/false));  // ConvolutionAlgorithm::direct
}
#endif
