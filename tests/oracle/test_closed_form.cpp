// SPDX-License-Identifier: MIT
// ParaDL's closed form, the baseline the oracle is judged against, on the calibration predict
// uses, against steps worked out by hand.
#include <hpf/hpf.hpp>
#include <hpf/oracle/closed_form.hpp>
#include <hpf/oracle/model_view.hpp>
#include <hpf/oracle/predict.hpp>

#include <doctest/doctest.h>
#include <support/tiny_oracle.hpp>

#include <algorithm>

namespace {

using namespace hpf;
using hpf_test::linear_profile;
using hpf_test::plan;
using hpf_test::Tiny;

}  // namespace

TEST_CASE("closed form: (M + S - 1) slots of the busiest stage, the fill and drain, the last bucket") {
  const auto view = oracle::view_of<Tiny>("tiny");
  auto profile = linear_profile();
  // One process: 6 units x 3 ms x 4 samples x 2 micro-batches, as predict says.
  CHECK(oracle::closed_form(view, plan(1, 1, 8, 2, Schedule::one_f_one_b), profile).time_s == doctest::Approx(0.144));

  const auto bounds = oracle::balanced_bounds<Tiny>(2);
  std::size_t first_units = 0;
  for (const auto& u : view.units) first_units += oracle::in_stage(u, bounds[0], bounds[1], false) ? 1 : 0;
  const double slot = 2 * 3e-3 * static_cast<double>(std::max(first_units, 6 - first_units));  // 2 samples
  profile.comm["p2p_latency"].by_ranks[2] = {{0, 1e30, 1e-3, 0}};  // 1 ms per message
  for (const Schedule schedule : {Schedule::gpipe, Schedule::one_f_one_b}) {
    const auto p = oracle::closed_form(view, plan(2, 1, 8, 4, schedule), profile);
    CHECK(p.compute_s == doctest::Approx(4 * slot));
    CHECK(p.bubble_s == doctest::Approx(slot));
    CHECK(p.transfer_s == doctest::Approx(2e-3));
    CHECK(p.time_s == doctest::Approx(5 * slot + 2e-3));
  }
  // Two replicas: the last (here the only) bucket's alpha + beta x bytes is exposed: 47 gradients.
  profile.comm["buckets_ordered"].by_ranks[2] = {{0, 1e30, 5e-3, 1e-6}};
  const auto replicated = oracle::closed_form(view, plan(1, 2, 8, 1, Schedule::one_f_one_b), profile);
  CHECK(replicated.reduction_s == doctest::Approx(5e-3 + 47 * sizeof(float) * 1e-6));
  CHECK(replicated.time_s == doctest::Approx(6 * 3e-3 * 4 + replicated.reduction_s));
}
