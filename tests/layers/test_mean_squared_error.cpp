#include <hpf/data/synthetic.hpp>
#include <hpf/layers/dense.hpp>
#include <hpf/layers/flatten.hpp>
#include <hpf/layers/mean_squared_error.hpp>
#include <hpf/layers/relu.hpp>
#include <hpf/model/network.hpp>
#include <hpf/model/sequential.hpp>
#include <hpf/train/trainer.hpp>

#include <support/fill.hpp>
#include <support/gradient_check.hpp>

#include <doctest/doctest.h>

#include <cmath>
#include <stdexcept>

TEST_CASE("MeanSquaredError: prediction, per-sample loss and gradient") {
  using M = hpf::Sequential<hpf::Input<3, 1, 2>, hpf::MeanSquaredError>;  // 6 targets per sample
  static_assert(M::trainable);
  using Net = hpf::Network<M, double>;
  static_assert(!Net::classifier && Net::target_size == 6);
  Net net;
  constexpr std::size_t N = 4, K = 6;
  auto tape = net.make_tape(N);
  const auto x = hpf_test::fill_uniform(net.input(tape, N), 1, -2, 2);
  auto t = Kokkos::create_mirror_view(net.targets(tape, N));
  for (std::size_t i = 0; i < t.size(); ++i) t(i) = 0.1 * static_cast<double>(i) - 1;
  Kokkos::deep_copy(net.targets(tape, N), t);
  net.forward(tape, N);
  const auto y = hpf_test::to_host(net.output(tape));
  double expected = 0;
  for (std::size_t j = 0; j < N; ++j) {
    double sample = 0;
    for (std::size_t c = 0; c < 3; ++c) {
      for (std::size_t s = 0; s < 2; ++s) {
        const double v = x[(c * N + j) * 2 + s];
        CHECK(y[(c * N + j) * 2 + s] == v);
        const double d = v - t(j * K + c * 2 + s);
        sample += d * d;
      }
    }
    expected += sample / K;
  }
  CHECK(net.loss_sum(tape) == doctest::Approx(expected).epsilon(1e-14));
  const auto r = hpf_test::gradient_check<M>(N);
  CHECK(r.worst_input_error < 1e-6);
}

TEST_CASE("MeanSquaredError: a regression MLP's gradients and a falling loss through Trainer") {
  using M = hpf::Sequential<hpf::Input<2, 3, 3>, hpf::Flatten, hpf::Dense<16>, hpf::ReLU, hpf::Dense<3>, hpf::MeanSquaredError>;
  const auto r = hpf_test::gradient_check<M>(5);
  CHECK(r.worst_input_error < 1e-6);
  CHECK(r.worst_parameter_error < 1e-6);

  const auto train = hpf::data::synthetic_regression(256, 2, 3, 3, 3, 7);
  const auto test = hpf::data::synthetic_regression(64, 2, 3, 3, 3, 7);
  hpf::TrainOptions o;
  o.batch = 32;
  o.epochs = 8;
  o.progress = hpf::ProgressMode::none;
  o.optimizer = hpf::SgdOptions{.learning_rate = 0.05, .momentum = 0.9};
  hpf::Trainer<M> trainer(o, train, &test);
  const double before = trainer.evaluate().loss;
  const auto report = trainer.fit();
  const hpf::Evaluation after = trainer.evaluate();
  INFO("test loss ", before, " -> ", after.loss);
  CHECK(std::isnan(after.accuracy));  // no accuracy for a regression loss
  CHECK(after.loss < 0.5 * before);
  CHECK(report.epochs.back().test_loss == after.loss);
}

TEST_CASE("MeanSquaredError: data that does not fit the model is a clear error") {
  using M = hpf::Sequential<hpf::Input<2, 3, 3>, hpf::Flatten, hpf::Dense<3>, hpf::MeanSquaredError>;
  hpf::TrainOptions o;
  o.batch = 8;
  const auto four_targets = hpf::data::synthetic_regression(16, 2, 3, 3, 4, 1);
  CHECK_THROWS_WITH_AS((hpf::Trainer<M>(o, four_targets)),
                       "hpf: the training set has 4 targets per sample but the model predicts 3", std::invalid_argument);
  const auto labelled = hpf::data::synthetic_dataset(16, 2, 3, 3, 3, 1);
  CHECK_THROWS_WITH_AS((hpf::Trainer<M>(o, labelled)),
                       "hpf: the training set has class labels but the model ends with a regression loss",
                       std::invalid_argument);
}
