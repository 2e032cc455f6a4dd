#include <hpf/layers/global_avg_pool.hpp>
#include <hpf/model/network.hpp>
#include <hpf/model/sequential.hpp>

#include <support/fill.hpp>
#include <support/gradient_check.hpp>

#include <doctest/doctest.h>

TEST_CASE("GlobalAvgPool: a vector of channel means") {
  using M = hpf::Sequential<hpf::Input<3, 2, 4>, hpf::GlobalAvgPool>;
  static_assert(std::is_same_v<M::output_shape, hpf::Shape<3>>);
  hpf::Network<M, double> net;
  auto tape = net.make_tape(2);
  const auto x = hpf_test::fill_uniform(net.input(tape, 2), 2);
  net.forward(tape, 2);
  const auto y = hpf_test::to_host(net.output(tape));
  for (std::size_t c = 0; c < 3; ++c)
    for (std::size_t j = 0; j < 2; ++j) {
      double sum = 0;
      for (std::size_t s = 0; s < 8; ++s) sum += x[(c * 2 + j) * 8 + s];
      CHECK(y[c * 2 + j] == doctest::Approx(sum / 8));
    }
  auto r = hpf_test::gradient_check<M>(3);
  CHECK(r.worst_input_error < 1e-6);
}

TEST_CASE("GlobalAvgPool on sequences and volumes: the mean over positions of each feature or channel") {
  using Sequence = hpf::Sequential<hpf::Input<5, 3>, hpf::GlobalAvgPool>;  // x.mean(dim=1) on [N, T, D]
  static_assert(std::is_same_v<Sequence::output_shape, hpf::Shape<3>>);
  using Volume = hpf::Sequential<hpf::Input<2, 3, 2, 2>, hpf::GlobalAvgPool>;
  static_assert(std::is_same_v<Volume::output_shape, hpf::Shape<2>>);
  hpf::Network<Sequence, double> net;
  auto tape = net.make_tape(2);
  const auto x = hpf_test::fill_uniform(net.input(tape, 2), 3);  // [D][N][T]
  net.forward(tape, 2);
  const auto y = hpf_test::to_host(net.output(tape));
  for (std::size_t d = 0; d < 3; ++d)
    for (std::size_t j = 0; j < 2; ++j) {
      double sum = 0;
      for (std::size_t t = 0; t < 5; ++t) sum += x[(d * 2 + j) * 5 + t];
      CHECK(y[d * 2 + j] == doctest::Approx(sum / 5));
    }
  CHECK(hpf_test::gradient_check<Sequence>(2).worst_input_error < 1e-6);
  CHECK(hpf_test::gradient_check<Volume>(2).worst_input_error < 1e-6);
}
