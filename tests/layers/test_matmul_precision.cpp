// MatmulPrecision::bf16 in the layers whose products it rounds: Dense, Conv2D (oneDNN and im2col),
// Conv3D and MultiHeadAttention. Each result is compared with the same layer in double on inputs
// rounded to bf16 as the precision promises (forward: x and W; backward: dy too).
#include <hpf/layers/conv2d.hpp>
#include <hpf/layers/conv3d.hpp>
#include <hpf/layers/dense.hpp>
#include <hpf/layers/multi_head_attention.hpp>
#include <hpf/model/network.hpp>
#include <hpf/model/sequential.hpp>
#include <hpf/tensor/bf16.hpp>
#include <hpf/tensor/random.hpp>

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

namespace {

/// A layer's output, input gradient and parameter gradients, flattened.
struct Results {
  std::vector<double> y, dx, grads;
};

std::vector<double> rounded(std::vector<double> v) {
  for (double& x : v) x = hpf::round_to_bf16(static_cast<float>(x));
  return v;
}

/// The largest difference of a and b relative to b's largest entry.
double difference(const std::vector<double>& a, const std::vector<double>& b) {
  REQUIRE(a.size() == b.size());
  double worst = 0, scale = 1e-30;
  for (std::size_t i = 0; i < a.size(); ++i) {
    worst = std::max(worst, std::abs(a[i] - b[i]));
    scale = std::max(scale, std::abs(b[i]));
  }
  return worst / scale;
}

/// Forward and backward of Model in T with the given options, parameters, input x and output gradient dy.
template <class Model, class T>
Results run(const hpf::NetworkOptions& options, const std::vector<std::vector<double>>& params, const std::vector<double>& x,
            const std::vector<double>& dy, std::size_t batch) {
  hpf::Network<Model, T> net(options);
  std::size_t p = 0;
  for (const auto& info : net.tensors())
    if (info.kind == hpf::TensorKind::parameter) {
      net.write(info, std::vector<T>(params[p].begin(), params[p].end()));
      ++p;
    }
  auto tape = net.make_tape(batch);
  auto x_host = Kokkos::create_mirror_view(net.input(tape, batch));
  std::copy(x.begin(), x.end(), x_host.data());
  Kokkos::deep_copy(net.input(tape, batch), x_host);
  net.forward(tape, batch);
  hpf::Buffer<T, Kokkos::DefaultExecutionSpace> dy_buffer("dy", dy.size()), dx_buffer("dx", x.size());
  auto dy_host = Kokkos::create_mirror_view(dy_buffer);
  std::copy(dy.begin(), dy.end(), dy_host.data());
  Kokkos::deep_copy(dy_buffer, dy_host);
  using In = typename Model::input_shape;
  using Out = typename Model::output_shape;
  net.zero_grad();
  net.backward(tape, T(1), hpf::activation_view(dy_buffer, Out::channels, batch, Out::spatial),
               hpf::activation_view(dx_buffer, In::channels, batch, In::spatial));
  Results r;
  const auto y = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, net.output(tape));
  const auto dx = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace{}, dx_buffer);
  r.y.assign(y.data(), y.data() + y.size());
  r.dx.assign(dx.data(), dx.data() + dx.size());
  for (const auto& info : net.tensors())
    if (info.kind == hpf::TensorKind::parameter)
      for (const T g : net.read(info, /*gradient=*/true)) r.grads.push_back(static_cast<double>(g));
  return r;
}

/// Random parameters (as float would hold them), input and output gradient of Model.
struct Case {
  std::vector<std::vector<double>> params;
  std::vector<double> x, dy;
};
template <class Model>
Case random_case(std::size_t batch) {
  hpf::Network<Model, float> net(hpf::NetworkOptions{.seed = 3});
  hpf::Rng rng(11, "matmul_precision");
  const auto draw = [&](std::size_t n) {
    std::vector<double> v(n);
    for (double& e : v) e = static_cast<float>(rng.uniform(-1.0, 1.0));
    return v;
  };
  Case c;
  for (const auto& info : net.tensors())
    if (info.kind == hpf::TensorKind::parameter) c.params.push_back(draw(info.size));
  c.x = draw(Model::input_shape::size * batch);
  c.dy = draw(Model::output_shape::size * batch);
  return c;
}

/// A layer without bias whose every product is of the model's inputs, weights and output
/// gradient: bf16 results equal double's on those rounded, up to float sums.
template <class Model>
void check_exact(hpf::ConvolutionAlgorithm convolution, std::size_t batch = 3) {
  const Case c = random_case<Model>(batch);
  hpf::NetworkOptions bf16{.convolution = convolution, .matmul_precision = hpf::MatmulPrecision::bf16};
  const Results low = run<Model, float>(bf16, c.params, c.x, c.dy, batch);
  std::vector<std::vector<double>> rounded_params;
  for (const auto& p : c.params) rounded_params.push_back(rounded(p));
  const Results expected = run<Model, double>({}, rounded_params, rounded(c.x), rounded(c.dy), batch);
  const Results unrounded = run<Model, double>({}, c.params, c.x, c.dy, batch);
  CHECK(difference(low.y, expected.y) < 1e-5);
  CHECK(difference(low.dx, expected.dx) < 1e-5);
  CHECK(difference(low.grads, expected.grads) < 1e-5);
  CHECK(difference(low.y, unrounded.y) > 1e-4);  // the rounding did happen
  CHECK(difference(low.grads, unrounded.grads) > 1e-4);
}

constexpr auto automatic = hpf::ConvolutionAlgorithm::automatic;

}  // namespace

TEST_CASE("MatmulPrecision::bf16: Dense reads x, W and dy in bf16") {
  check_exact<hpf::Sequential<hpf::Input<40>, hpf::Dense<24, hpf::NoBias>>>(automatic, 5);  // small: emulated
  check_exact<hpf::Sequential<hpf::Input<256>, hpf::Dense<256, hpf::NoBias>>>(automatic, 16);  // oneDNN's where it has it
  check_exact<hpf::Sequential<hpf::Input<6, 40>, hpf::Dense<24, hpf::NoBias>>>(automatic);  // per position
}

TEST_CASE("MatmulPrecision::bf16: Conv2D on oneDNN and on im2col + GEMM") {
  using Same = hpf::Sequential<hpf::Input<32, 9, 9>, hpf::Conv2D<32, 3, hpf::Pad<1>, hpf::NoBias>>;  // Winograd in float
  using Strided = hpf::Sequential<hpf::Input<5, 11, 10>, hpf::Conv2D<7, 3, hpf::Stride<2>, hpf::Pad<1>, hpf::NoBias>>;
  using Pointwise = hpf::Sequential<hpf::Input<6, 5, 5>, hpf::Conv2D<8, 1, hpf::NoBias>>;
  for (const auto algorithm : {automatic, hpf::ConvolutionAlgorithm::gemm}) {
    CAPTURE(static_cast<int>(algorithm));
    check_exact<Same>(algorithm);
    check_exact<Strided>(algorithm);
    check_exact<Pointwise>(algorithm);
  }
}

TEST_CASE("MatmulPrecision::bf16: a weight gradient summed over several sub-batches") {
  // oneDNN's bf16 weight gradient runs sub-batches of about 8192 output pixels, each its own sum:
  // 8, 8 and 4 images of 32x32 here.
  using Large = hpf::Sequential<hpf::Input<16, 32, 32>, hpf::Conv2D<16, 3, hpf::Pad<1>, hpf::NoBias>>;
  check_exact<Large>(automatic, 20);
}

TEST_CASE("MatmulPrecision::bf16: convolutions over fewer than 4 input channels compute in float") {
  static_assert(hpf::bf16_convolution_min_channels == 4);
  using Rgb = hpf::Sequential<hpf::Input<3, 9, 8>, hpf::Conv2D<16, 3, hpf::Pad<1>>>;
  using Grey = hpf::Sequential<hpf::Input<1, 5, 6, 6>, hpf::Conv3D<4, 3, hpf::Pad<1>>>;
  using Four = hpf::Sequential<hpf::Input<4, 9, 8>, hpf::Conv2D<16, 3, hpf::Pad<1>, hpf::NoBias>>;
  for (const auto algorithm : {automatic, hpf::ConvolutionAlgorithm::gemm}) {
    CAPTURE(static_cast<int>(algorithm));
    const auto same_as_float = [&]<class Model>() {
      const Case c = random_case<Model>(3);
      const Results low = run<Model, float>({.convolution = algorithm, .matmul_precision = hpf::MatmulPrecision::bf16},
                                            c.params, c.x, c.dy, 3);
      const Results full = run<Model, float>({.convolution = algorithm}, c.params, c.x, c.dy, 3);
      CHECK(low.y == full.y);
      CHECK(low.dx == full.dx);
      CHECK(low.grads == full.grads);
    };
    same_as_float.template operator()<Rgb>();
    same_as_float.template operator()<Grey>();
    check_exact<Four>(algorithm);  // from 4 channels on, bf16
  }
}

TEST_CASE("MatmulPrecision::bf16: Conv3D") {
  using Padded = hpf::Sequential<hpf::Input<4, 5, 6, 6>, hpf::Conv3D<6, 3, hpf::Pad<1>, hpf::NoBias>>;
  check_exact<Padded>(automatic);
  check_exact<Padded>(hpf::ConvolutionAlgorithm::gemm);
}

TEST_CASE("MatmulPrecision::bf16: a bias is added in float") {
  using M = hpf::Sequential<hpf::Input<16>, hpf::Dense<8>>;
  const Case c = random_case<M>(4);
  const Results low = run<M, float>({.matmul_precision = hpf::MatmulPrecision::bf16}, c.params, c.x, c.dy, 4);
  const Results expected = run<M, double>({}, {rounded(c.params[0]), c.params[1]}, rounded(c.x), c.dy, 4);
  CHECK(difference(low.y, expected.y) < 1e-5);
}

TEST_CASE("MatmulPrecision::bf16: attention's products too, softmax in float") {
  using M = hpf::Sequential<hpf::Input<8, 16>, hpf::MultiHeadAttention<2>>;
  const Case c = random_case<M>(3);
  const Results low = run<M, float>({.matmul_precision = hpf::MatmulPrecision::bf16}, c.params, c.x, c.dy, 3);
  const Results full = run<M, float>({}, c.params, c.x, c.dy, 3);
  // Intermediate products (q k^T, P v) are rounded too, so no double model reproduces them: bf16's
  // relative precision (2^-9 per input) shows, and nothing beyond it.
  for (const auto part : {&Results::y, &Results::dx, &Results::grads}) {
    const double d = difference(low.*part, full.*part);
    CHECK(d > 1e-4);
    CHECK(d < 3e-2);
  }
}

TEST_CASE("MatmulPrecision::bf16 is for float networks") {
  using M = hpf::Sequential<hpf::Input<4>, hpf::Dense<2>>;
  CHECK_THROWS_WITH_AS((hpf::Network<M, double>(hpf::NetworkOptions{.matmul_precision = hpf::MatmulPrecision::bf16})),
                       doctest::Contains("MatmulPrecision::bf16 is for float networks"), std::invalid_argument);
}
