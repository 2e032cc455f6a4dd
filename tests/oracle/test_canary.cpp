// SPDX-License-Identifier: MIT
// The canary: a short pass of a model's layers against the profile's calibration of them, and the
// profile's compute rescaled by their ratio.
#include <hpf/hpf.hpp>
#include <hpf/oracle/canary.hpp>
#include <hpf/oracle/model_view.hpp>
#include <hpf/oracle/predict.hpp>

#include <doctest/doctest.h>

#include <string>

namespace {

using namespace hpf;
using Small = Sequential<Input<1, 12, 12>, Conv2D<8, 3, Pad<1>>, ReLU, MaxPool<2>, Flatten, Dense<16>, ReLU, Dense<3>,
                         SoftmaxCrossEntropy>;

oracle::MachineProfile calibrated_now() {
  oracle::MachineProfile p;
  p.label = "test";
  p.cores = 64;
  oracle::calibrate<Small>(p, {.batches = {1, 8, 32}, .repeats = 3});
  return p;
}

}  // namespace

TEST_CASE("rescaled compute scales every calibrated price, not communication") {
  auto profile = calibrated_now();
  profile.comm["p2p_latency"].by_ranks[2] = {{0, 1e30, 1e-3, 0}};
  const auto view = oracle::view_of<Small>("small");
  const oracle::Plan one{.stages = 1, .replicas = 1, .batch = 32, .micro_batches = 1, .bounds = oracle::balanced_bounds<Small>(1)};
  const double before = oracle::predict(view, one, profile).time_s;
  const double optimizer = profile.optimizer_s_per_parameter, sums = profile.exchange_sum_s_per_element;
  CHECK(sums > 0);  // calibrated
  oracle::rescale_compute(profile, 3);
  CHECK(oracle::predict(view, one, profile).time_s == doctest::Approx(3 * before));
  CHECK(profile.optimizer_s_per_parameter == doctest::Approx(3 * optimizer));
  CHECK(profile.exchange_sum_s_per_element == doctest::Approx(3 * sums));
  CHECK(profile.fit("p2p_latency").seconds(100, 2) == doctest::Approx(1e-3));
}

TEST_CASE("a profile whose compute is 20 times too slow: the canary measures about 1/20") {
  auto profile = calibrated_now();
  oracle::rescale_compute(profile, 20);
  // 0.05 on a quiet host; the bounds leave a factor of 4 either way for a busy one.
  auto about_a_twentieth = [](double ratio) { return ratio > 0.0125 && ratio < 0.2; };
  const oracle::Canary c = oracle::canary<Small>(profile, 0.5);
  CHECK(c.batch > 0);
  CHECK(c.seconds > 0);
  CHECK(about_a_twentieth(c.ratio));
  // Its two halves, as hpf::Auto's ranks run them: the plan from the profile (rank 0 alone), and the
  // plan's batch timed where the profile is not (every rank).
  const oracle::CanaryPlan plan = oracle::canary_plan<Small>(profile, 0.5);
  CHECK(plan.batch == c.batch);
  CHECK(about_a_twentieth(oracle::canary_seconds<Small>(plan.batch) / plan.calibrated_s));
}

TEST_CASE("a cheap model's canary fills its seconds with passes; a costly one keeps the minimum") {
  auto profile = calibrated_now();
  // Seconds for 41 passes at the largest calibrated batch: the first, then 20 untimed and timed.
  const oracle::CanaryPlan unbounded = oracle::canary_plan<Small>(profile, 1e9);
  CHECK(unbounded.repeats == oracle::canary_max_repeats);
  const double seconds = 41.5 * unbounded.calibrated_s;
  const oracle::CanaryPlan cheap = oracle::canary_plan<Small>(profile, seconds);
  CHECK(cheap.batch == unbounded.batch);
  CHECK(cheap.repeats == 20);
  CHECK(oracle::canary_plan<Small>(profile, seconds, MatmulPrecision::full, 1e9, 25).repeats == 25);
  oracle::rescale_compute(profile, 1e6);
  const oracle::CanaryPlan costly = oracle::canary_plan<Small>(profile, 0.5);
  CHECK(costly.batch == profile.unit(oracle::layer_keys<Small>().front())->batch.front());
  CHECK(costly.repeats == 3);
  CHECK(oracle::canary<Small>(profile, 0.5).repeats == 3);
}

TEST_CASE("the canary runs at most the run's micro-batch") {
  const auto profile = calibrated_now();  // at 1, 8 and 32 samples
  auto batch_at_most = [&](double b) { return oracle::canary_plan<Small>(profile, 1e9, MatmulPrecision::full, b).batch; };
  CHECK(batch_at_most(1e9) == 32);
  CHECK(batch_at_most(31) == 8);
  CHECK(batch_at_most(8) == 8);
  CHECK(batch_at_most(0.5) == 1);  // the smallest calibrated where all are larger
  CHECK(oracle::canary<Small>(profile, 0.5, MatmulPrecision::full, nullptr, 8).batch == 8);
}

TEST_CASE("a profile without the model's layers: no canary, ratio 1") {
  oracle::MachineProfile empty;
  const oracle::Canary c = oracle::canary<Small>(empty, 0.5);
  CHECK(c.batch == 0);
  CHECK(c.ratio == 1);
  CHECK(oracle::canary_plan<Small>(empty, 0.5).batch == 0);
}
