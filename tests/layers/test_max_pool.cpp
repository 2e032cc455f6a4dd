#include <hpf/layers/max_pool.hpp>
#include <hpf/model/network.hpp>
#include <hpf/model/sequential.hpp>

#include <support/fill.hpp>
#include <support/gradient_check.hpp>

#include <doctest/doctest.h>

#include <limits>

TEST_CASE("MaxPool: output shapes") {
  static_assert(std::is_same_v<hpf::Sequential<hpf::Input<8, 28, 28>, hpf::MaxPool<2>>::output_shape, hpf::Shape<8, 14, 14>>);
  static_assert(std::is_same_v<hpf::Sequential<hpf::Input<8, 7, 7>, hpf::MaxPool<2>>::output_shape, hpf::Shape<8, 3, 3>>);
  static_assert(std::is_same_v<hpf::Sequential<hpf::Input<2, 9, 9>, hpf::MaxPool<3, hpf::Stride<2>, hpf::Pad<1>>>::output_shape,
                               hpf::Shape<2, 5, 5>>);
}

TEST_CASE("MaxPool: forward picks the window maximum, padding never wins") {
  constexpr std::size_t C = 2, H = 5, W = 6, N = 3, K = 3, S = 2, P = 1;
  using M = hpf::Sequential<hpf::Input<C, H, W>, hpf::MaxPool<K, hpf::Stride<S>, hpf::Pad<P>>>;
  using Out = M::output_shape;
  hpf::Network<M, double> net;
  auto tape = net.make_tape(N);
  const auto x = hpf_test::fill_uniform(net.input(tape, N), 9, -3.0, -1.0);  // all negative: zero padding would win
  net.forward(tape, N);
  const auto y = hpf_test::to_host(net.output(tape));
  for (std::size_t c = 0; c < C; ++c)
    for (std::size_t j = 0; j < N; ++j)
      for (std::size_t oh = 0; oh < Out::height; ++oh)
        for (std::size_t ow = 0; ow < Out::width; ++ow) {
          double best = -std::numeric_limits<double>::infinity();
          for (std::size_t kh = 0; kh < K; ++kh)
            for (std::size_t kw = 0; kw < K; ++kw) {
              const long ih = long(oh * S + kh) - long(P), iw = long(ow * S + kw) - long(P);
              if (ih >= 0 && iw >= 0 && ih < long(H) && iw < long(W)) best = std::max(best, x[(c * N + j) * H * W + ih * W + iw]);
            }
          CHECK(y[(c * N + j) * Out::spatial + oh * Out::width + ow] == best);
        }
}

TEST_CASE("MaxPool: finite-difference gradients") {
  SUBCASE("2x2") {
    auto r = hpf_test::gradient_check<hpf::Sequential<hpf::Input<2, 6, 5>, hpf::MaxPool<2>>>(3);
    CHECK(r.worst_input_error < 1e-6);
  }
  SUBCASE("overlapping 3x3 stride 2 pad 1") {
    auto r = hpf_test::gradient_check<hpf::Sequential<hpf::Input<2, 7, 7>, hpf::MaxPool<3, hpf::Stride<2>, hpf::Pad<1>>>>(2);
    CHECK(r.worst_input_error < 1e-6);
  }
}
