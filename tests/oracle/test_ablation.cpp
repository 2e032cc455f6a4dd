// SPDX-License-Identifier: MIT
// The ablation's predictors: each of predict's refinements left out gives the step without it,
// and ParaDL's closed form on the same calibration, against steps worked out by hand.
#include <hpf/hpf.hpp>
#include <hpf/oracle/closed_form.hpp>
#include <hpf/oracle/model_view.hpp>
#include <hpf/oracle/predict.hpp>
#include <hpf/oracle/terms.hpp>

#include <doctest/doctest.h>
#include <support/tiny_oracle.hpp>

#include <algorithm>
#include <stdexcept>
#include <string>

namespace {

using namespace hpf;
using hpf_test::linear_profile;
using hpf_test::plan;
using hpf_test::Tiny;

double step(const oracle::MachineProfile& profile, const oracle::Plan& p, const std::string& without = "") {
  return oracle::predict(oracle::view_of<Tiny>("tiny"), p, profile, 0, oracle::Terms::without(without)).time_s;
}

}  // namespace

TEST_CASE("terms are named; an unknown one is an error listing them") {
  CHECK(oracle::Terms{}.all());
  CHECK_FALSE(oracle::Terms::without("burst").burst);
  CHECK_THROWS_WITH_AS(oracle::Terms::without("burst,stalls"),
                       "unknown oracle term 'stalls' (terms: burst)", std::invalid_argument);
}

TEST_CASE("each term left out gives the step without its refinement") {
  const auto quiet = linear_profile();
  SUBCASE("burst: a shaped link streams every message") {
    auto link = quiet;
    for (auto& [key, unit] : link.units) unit = {{1, 64}, {1e-7, 64e-7}, {2e-7, 128e-7}, {0, 0}, {0, 0}, {}, {}};
    link.comm["p2p_latency"].by_ranks[2] = {{0, 1e30, 30e-3, 0}};
    link.comm["p2p_bandwidth"].by_ranks[2] = {{0, 1e30, 0, 1e-3}};
    const auto p = plan(2, 1, 8, 1, Schedule::gpipe);
    const double plain = step(link, p);
    link.link.burst_bytes = 1e6;
    link.link.rested_alpha_s = 2e-5;
    CHECK(step(link, p) < plain - 50e-3);
    CHECK(step(link, p, "burst") == doctest::Approx(plain));
  }
}

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
