#include <hpf/layers/multi_head_attention.hpp>
#include <hpf/model/network.hpp>
#include <hpf/model/sequential.hpp>

#include <support/fill.hpp>
#include <support/gradient_check.hpp>

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

// Model types spell their sizes as literals: nvcc 13's front end re-emits a specialisation first
// named through a constexpr variable as `MultiHeadAttention<unsigned long((2))>`, which the host
// compiler rejects wherever the same specialisation is named again.

namespace {

/// PyTorch's nn.MultiheadAttention(D, H, batch_first=True)(x, x, x, need_weights=False) written
/// out in loops: x and the result are `[D][N][T]`, the weights PyTorch's.
struct Reference {
  std::size_t T, D, H, N;
  bool causal;
  std::vector<double> w_in, b_in, w_out, b_out;

  std::vector<double> operator()(const std::vector<double>& x) const {
    const std::size_t dh = D / H;
    const auto at = [&](std::size_t d, std::size_t j, std::size_t t) { return (d * N + j) * T + t; };
    std::vector<double> y(D * N * T);
    for (std::size_t j = 0; j < N; ++j) {
      std::vector<double> qkv(3 * D * T), o(D * T);  // [row][t]
      for (std::size_t r = 0; r < 3 * D; ++r)
        for (std::size_t t = 0; t < T; ++t) {
          double s = b_in[r];
          for (std::size_t d = 0; d < D; ++d) s += w_in[r * D + d] * x[at(d, j, t)];
          qkv[r * T + t] = s;
        }
      for (std::size_t h = 0; h < H; ++h)
        for (std::size_t t = 0; t < T; ++t) {
          const std::size_t keys = causal ? t + 1 : T;
          std::vector<double> p(keys);
          for (std::size_t u = 0; u < keys; ++u) {
            double s = 0;
            for (std::size_t e = 0; e < dh; ++e)
              s += qkv[(h * dh + e) * T + t] / std::sqrt(double(dh)) * qkv[(D + h * dh + e) * T + u];
            p[u] = s;
          }
          const double top = *std::max_element(p.begin(), p.end());
          double sum = 0;
          for (double& v : p) sum += v = std::exp(v - top);
          for (std::size_t e = 0; e < dh; ++e) {
            double s = 0;
            for (std::size_t u = 0; u < keys; ++u) s += p[u] / sum * qkv[(2 * D + h * dh + e) * T + u];
            o[(h * dh + e) * T + t] = s;
          }
        }
      for (std::size_t i = 0; i < D; ++i)
        for (std::size_t t = 0; t < T; ++t) {
          double s = b_out[i];
          for (std::size_t c = 0; c < D; ++c) s += w_out[i * D + c] * o[c * T + t];
          y[at(i, j, t)] = s;
        }
    }
    return y;
  }
};

/// Writes random weights and biases into layer 0 and returns them as a Reference.
template <class Net>
Reference randomize(Net& net, std::size_t T, std::size_t D, std::size_t H, std::size_t N, bool causal) {
  Reference ref{T, D, H, N, causal, {}, {}, {}, {}};
  hpf::Rng rng(42);
  const auto fill = [&](const char* name, std::vector<double>& v, double bound) {
    v.resize(net.tensor(name).size);
    for (double& value : v) value = rng.uniform(-bound, bound);
    net.write(net.tensor(name), v);
  };
  fill("0.in_proj_weight", ref.w_in, 0.8);
  fill("0.in_proj_bias", ref.b_in, 0.3);
  fill("0.out_proj.weight", ref.w_out, 0.5);
  fill("0.out_proj.bias", ref.b_out, 0.3);
  return ref;
}

bool same_bits(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; }

template <class Net>
std::vector<double> all_gradients(const Net& net) {
  std::vector<double> g;
  for (const auto& info : net.tensors()) {
    const auto v = net.read(info, /*gradient=*/true);
    g.insert(g.end(), v.begin(), v.end());
  }
  return g;
}

template <bool Causal>
void check_forward() {
  using Layer = std::conditional_t<Causal, hpf::MultiHeadAttention<2, hpf::Causal>, hpf::MultiHeadAttention<2>>;
  using M = hpf::Sequential<hpf::Input<5, 8>, Layer>;
  static_assert(std::is_same_v<typename M::output_shape, hpf::Shape<5, 8>>);
  constexpr std::size_t T = 5, D = 8, H = 2, N = 3;
  hpf::Network<M, double> net;
  const Reference ref = randomize(net, T, D, H, N, Causal);
  auto tape = net.make_tape(N);
  const auto x = hpf_test::fill_uniform(net.input(tape, N), 7, -1.5, 1.5);  // [D][N][T]
  net.forward(tape, N);
  const auto y = hpf_test::to_host(net.output(tape));
  const auto expected = ref(x);
  REQUIRE(y.size() == expected.size());
  const double floor = 1e-3 * hpf_test::largest_magnitude(expected.data(), expected.size());
  double worst = 0;
  for (std::size_t i = 0; i < y.size(); ++i)
    worst = std::max(worst, hpf_test::relative_error(y[i], expected[i], floor));
  MESSAGE(std::string(Causal ? "causal" : "bidirectional") << " forward: max relative error " << worst);
  CHECK(worst < 1e-13);
}

}  // namespace

TEST_CASE("MultiHeadAttention: parameters named and shaped as PyTorch's, cost facts") {
  using M = hpf::Sequential<hpf::Input<6, 12>, hpf::MultiHeadAttention<3>>;
  using B = hpf::MultiHeadAttention<3>::bind<hpf::Shape<6, 12>>;
  constexpr std::size_t T = 6, D = 12, H = 3;
  static_assert(M::cost.parameters == 4 * D * D + 4 * D);
  static_assert(B::cost.macs == 4 * D * D * T + 2 * T * T * D);
  static_assert(B::cost.activations == 3 * D * T + H * T * T + D * T + D * T);
  static_assert(B::cost.forward_flops > 2 * B::cost.macs && B::cost.backward_flops > B::cost.forward_flops);
  hpf::Network<M, double> net;
  const auto& tensors = net.tensors();
  REQUIRE(tensors.size() == 4);
  CHECK(tensors[0].name == "0.in_proj_weight");
  CHECK(tensors[0].dims == std::vector<std::size_t>{3 * D, D});
  CHECK(tensors[1].name == "0.in_proj_bias");
  CHECK(tensors[1].dims == std::vector<std::size_t>{3 * D});
  CHECK(tensors[2].name == "0.out_proj.weight");
  CHECK(tensors[2].dims == std::vector<std::size_t>{D, D});
  CHECK(tensors[3].name == "0.out_proj.bias");
  CHECK(tensors[3].dims == std::vector<std::size_t>{D});
  CHECK(net.parameter_count() == 4 * D * D + 4 * D);
  // PyTorch's initialisation: Xavier-uniform in-projection, Linear's default out-projection, zero biases.
  const auto w_in = net.read(net.tensor("0.in_proj_weight"));
  const auto w_out = net.read(net.tensor("0.out_proj.weight"));
  CHECK(hpf_test::largest_magnitude(w_in.data(), w_in.size()) <= std::sqrt(6.0 / (D + 3 * D)));
  CHECK(hpf_test::largest_magnitude(w_in.data(), w_in.size()) > 0.5 * std::sqrt(6.0 / (D + 3 * D)));
  CHECK(hpf_test::largest_magnitude(w_out.data(), w_out.size()) <= 1 / std::sqrt(double(D)));
  for (const char* bias : {"0.in_proj_bias", "0.out_proj.bias"})
    for (double b : net.read(net.tensor(bias))) CHECK(b == 0.0);
  CHECK(B::describe() == "MultiHeadAttention(T=6, D=12, 3 heads)");

  using C = hpf::MultiHeadAttention<4, hpf::Causal, hpf::NoBias>::bind<hpf::Shape<16, 32>>;
  static_assert(C::cost.parameters == 4 * 32 * 32);
  static_assert(C::cost.macs == 4 * 32 * 32 * 16 + 2 * (16 * 17 / 2) * 32);  // masked pairs skipped
  CHECK(C::describe() == "MultiHeadAttention(T=16, D=32, 4 heads, causal, no bias)");
  hpf::Network<hpf::Sequential<hpf::Input<16, 32>, hpf::MultiHeadAttention<4, hpf::NoBias, hpf::Causal>>> no_bias;
  REQUIRE(no_bias.tensors().size() == 2);
  CHECK(no_bias.tensors()[0].name == "0.in_proj_weight");
  CHECK(no_bias.tensors()[1].name == "0.out_proj.weight");
  CHECK(no_bias.parameter_count() == 4 * 32 * 32);
}

TEST_CASE("MultiHeadAttention: forward as PyTorch computes it") {
  SUBCASE("bidirectional") { check_forward<false>(); }
  SUBCASE("causal") { check_forward<true>(); }
}

TEST_CASE("MultiHeadAttention<Causal>: an output does not see later positions") {
  constexpr std::size_t T = 29, N = 2, cut = 17;  // positions > cut change
  const auto run = [&](auto model, bool expect_unchanged) {
    using M = typename decltype(model)::type;
    hpf::Network<M, double> net(hpf::NetworkOptions{.seed = 3});
    auto tape = net.make_tape(N);
    auto x = hpf_test::fill_uniform(net.input(tape, N), 5);
    net.forward(tape, N);
    const auto before = hpf_test::to_host(net.output(tape));
    auto host = Kokkos::create_mirror_view(net.input(tape, N));
    for (std::size_t i = 0; i < x.size(); ++i) host.data()[i] = i % T > cut ? x[i] + 0.5 : x[i];
    Kokkos::deep_copy(net.input(tape, N), host);
    net.forward(tape, N);
    const auto after = hpf_test::to_host(net.output(tape));
    bool early_same = true, late_same = true;
    for (std::size_t i = 0; i < before.size(); ++i)
      (i % T <= cut ? early_same : late_same) &= same_bits(before[i], after[i]);
    CHECK(early_same == expect_unchanged);
    CHECK_FALSE(late_same);
  };
  run(std::type_identity<hpf::Sequential<hpf::Input<29, 6>, hpf::MultiHeadAttention<3, hpf::Causal>>>{}, true);
  // Without the mask the same change reaches every position: the check above can fail.
  run(std::type_identity<hpf::Sequential<hpf::Input<29, 6>, hpf::MultiHeadAttention<3>>>{}, false);
}

TEST_CASE("MultiHeadAttention: finite-difference gradients of the input and all parameters") {
  // L = sum(y * w): every input entry, 24 entries of each of the four parameters.
  const auto check = [](const auto& r, const std::string& what) {
    MESSAGE(what << ": input " << r.worst_input_error << ", parameters " << r.worst_parameter_error << " ("
                 << r.worst_parameter << ")");
    CHECK(r.worst_input_error < 1e-6);
    CHECK(r.worst_parameter_error < 1e-6);
  };
  check(hpf_test::gradient_check<hpf::Sequential<hpf::Input<4, 6>, hpf::MultiHeadAttention<2>>>(3), "bidirectional");
  check(hpf_test::gradient_check<hpf::Sequential<hpf::Input<5, 6>, hpf::MultiHeadAttention<3, hpf::Causal>>>(2),
        "causal");
  check(hpf_test::gradient_check<hpf::Sequential<hpf::Input<3, 4>, hpf::MultiHeadAttention<1, hpf::NoBias>>>(2),
        "one head, no bias");
  check(hpf_test::gradient_check<hpf::Sequential<hpf::Input<4, 4>, hpf::MultiHeadAttention<2, hpf::Causal>,
                                                 hpf::MultiHeadAttention<4>>>(2),
        "stacked (input gradient through a second attention)");
}

TEST_CASE("MultiHeadAttention: a sample's results are the same bits alone or in a batch, run after run") {
  // 37 positions: the vectorised loops have a remainder, and rows start at unaligned addresses.
  using M = hpf::Sequential<hpf::Input<37, 8>, hpf::MultiHeadAttention<2, hpf::Causal>>;
  constexpr std::size_t T = 37, D = 8, H = 2, N = 5, pick = 3;
  hpf::Network<M, double> net(hpf::NetworkOptions{.seed = 9});
  randomize(net, T, D, H, N, true);
  auto tape = net.make_tape(N);
  hpf::Buffer<double, Kokkos::DefaultExecutionSpace> dy("dy", D * N * T), dx("dx", D * N * T);
  const auto x = hpf_test::fill_uniform(net.input(tape, N), 21);
  const auto g = hpf_test::fill_uniform(hpf::activation_view(dy, D, N, T), 22);

  net.forward(tape, N);
  const auto batch_y = hpf_test::to_host(net.output(tape));
  net.zero_grad();
  net.backward(tape, 1.0, hpf::activation_view(dy, D, N, T), hpf::activation_view(dx, D, N, T));
  const auto batch_dx = hpf_test::to_host(dx);
  const auto batch_grads = all_gradients(net);

  // Sample `pick` alone: forward and backward twice.
  std::vector<double> alone_x(D * T), alone_g(D * T);
  for (std::size_t d = 0; d < D; ++d)
    for (std::size_t t = 0; t < T; ++t) {
      alone_x[d * T + t] = x[(d * N + pick) * T + t];
      alone_g[d * T + t] = g[(d * N + pick) * T + t];
    }
  std::vector<double> grads[2];
  for (int run = 0; run < 2; ++run) {
    hpf::write_range(tape.input, 0, alone_x);
    hpf::write_range(dy, 0, alone_g);
    net.forward(tape, 1);
    const auto y = hpf_test::to_host(net.output(tape));
    net.zero_grad();
    net.backward(tape, 1.0, hpf::activation_view(dy, D, 1, T), hpf::activation_view(dx, D, 1, T));
    const auto grad_in = hpf::read_range(dx, 0, D * T);
    bool y_same = true, dx_same = true;
    for (std::size_t d = 0; d < D; ++d)
      for (std::size_t t = 0; t < T; ++t) {
        y_same &= same_bits(y[d * T + t], batch_y[(d * N + pick) * T + t]);
        dx_same &= same_bits(grad_in[d * T + t], batch_dx[(d * N + pick) * T + t]);
      }
    CHECK(y_same);
    CHECK(dx_same);
    grads[run] = all_gradients(net);
  }
  CHECK(std::equal(grads[0].begin(), grads[0].end(), grads[1].begin(), same_bits));

  // And the whole batch again: the same bits.
  hpf::write_range(tape.input, 0, x);
  hpf::write_range(dy, 0, g);
  net.forward(tape, N);
  net.zero_grad();
  net.backward(tape, 1.0, hpf::activation_view(dy, D, N, T), hpf::activation_view(dx, D, N, T));
  const auto again = all_gradients(net);
  CHECK(std::equal(again.begin(), again.end(), batch_grads.begin(), same_bits));
  const auto again_dx = hpf_test::to_host(dx);
  CHECK(std::equal(again_dx.begin(), again_dx.end(), batch_dx.begin(), same_bits));
}
