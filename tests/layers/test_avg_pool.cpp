#include <hpf/layers/avg_pool.hpp>
#include <hpf/model/network.hpp>
#include <hpf/model/sequential.hpp>

#include <support/fill.hpp>
#include <support/gradient_check.hpp>

#include <doctest/doctest.h>

TEST_CASE("AvgPool: forward averages the window, counting padding (count_include_pad)") {
  constexpr std::size_t C = 2, H = 5, W = 4, N = 2, K = 3, S = 2, P = 1;
  // Literal arguments: nvcc's front end prints a type first named through constexpr variables
  // as `unsigned long((3))` wherever it appears later in the file, which g++ rejects.
  using M = hpf::Sequential<hpf::Input<2, 5, 4>, hpf::AvgPool<3, hpf::Stride<2>, hpf::Pad<1>>>;
  static_assert(std::is_same_v<M, hpf::Sequential<hpf::Input<C, H, W>, hpf::AvgPool<K, hpf::Stride<S>, hpf::Pad<P>>>>);
  using Out = M::output_shape;
  static_assert(std::is_same_v<Out, hpf::Shape<2, 3, 2>>);
  hpf::Network<M, double> net;
  auto tape = net.make_tape(N);
  const auto x = hpf_test::fill_uniform(net.input(tape, N), 4);
  net.forward(tape, N);
  const auto y = hpf_test::to_host(net.output(tape));
  for (std::size_t c = 0; c < C; ++c)
    for (std::size_t j = 0; j < N; ++j)
      for (std::size_t oh = 0; oh < Out::height; ++oh)
        for (std::size_t ow = 0; ow < Out::width; ++ow) {
          double sum = 0;
          for (std::size_t kh = 0; kh < K; ++kh)
            for (std::size_t kw = 0; kw < K; ++kw) {
              const long ih = long(oh * S + kh) - long(P), iw = long(ow * S + kw) - long(P);
              if (ih >= 0 && iw >= 0 && ih < long(H) && iw < long(W)) sum += x[(c * N + j) * H * W + ih * W + iw];
            }
          CHECK(y[(c * N + j) * Out::spatial + oh * Out::width + ow] == doctest::Approx(sum / (K * K)));
        }
}

TEST_CASE("AvgPool: finite-difference gradients") {
  auto plain = hpf_test::gradient_check<hpf::Sequential<hpf::Input<2, 4, 6>, hpf::AvgPool<2>>>(3);
  CHECK(plain.worst_input_error < 1e-6);
  auto padded = hpf_test::gradient_check<hpf::Sequential<hpf::Input<1, 7, 6>, hpf::AvgPool<3, hpf::Stride<2>, hpf::Pad<1>>>>(2);
  CHECK(padded.worst_input_error < 1e-6);
}
