// SPDX-License-Identifier: MIT
// The oracle's search for a pipeline's cuts, against every partition of small models, with
// profiles written here whose layer times do not follow their FLOPs.
#include <hpf/hpf.hpp>
#include <hpf/oracle/best_cuts.hpp>
#include <hpf/oracle/recommend.hpp>

#include <doctest/doctest.h>
#include <support/tiny_oracle.hpp>

#include <cstddef>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

using namespace hpf;
// The convolutions hold nearly all FLOPs, so Balanced<S> cuts between them; the profile below
// makes ReLU and pooling slow, so the time-balanced cuts lie elsewhere.
using Convs = Sequential<Input<2, 8, 8>, Conv2D<4, 3, Pad<1>>, ReLU, Conv2D<4, 3, Pad<1>>, ReLU, MaxPool<2>,
                         Conv2D<6, 3, Pad<1>>, ReLU, Conv2D<6, 3, Pad<1>>, ReLU, Flatten, Dense<10>, SoftmaxCrossEntropy>;
// A Repeat: cuts may also fall between its copies.
using Repeated = Sequential<Input<4, 6, 6>, Repeat<5, Chain<Conv2D<4, 3, Pad<1>>, ReLU>>, Flatten, Dense<10>,
                            SoftmaxCrossEntropy>;

/// Per sample: 4 ms forward and 8 ms backward for ReLU and pooling layers, 1 and 2 ms for the
/// others, with the key's position adding a little so that no two partitions tie exactly.
template <class Model>
oracle::MachineProfile skewed_profile() {
  oracle::MachineProfile p;
  p.label = "test";
  p.cores = 64;
  std::size_t i = 0;
  for (const std::string& key : oracle::layer_keys<Model>()) {
    const bool slow = key.find("ReLU") != std::string::npos || key.find("MaxPool") != std::string::npos;
    const double f = (slow ? 4e-3 : 1e-3) * (1 + 0.01 * static_cast<double>(i++));
    p.units[key] = hpf_test::linear_unit(f, 2 * f);
  }
  return p;
}

oracle::Plan pipeline(std::size_t stages, std::size_t micro_batches) {
  oracle::Plan plan;
  plan.stages = stages;
  plan.batch = 16;
  plan.micro_batches = micro_batches;
  return plan;
}

/// The fastest predicted step over every choice of stages - 1 cuts among the candidates.
double exhaustive_best(const oracle::ModelView& view, oracle::Plan plan, const oracle::MachineProfile& profile) {
  const std::vector<std::size_t> places = oracle::cut_candidates(view);
  double best = 1e300;
  std::vector<std::size_t> pick(plan.stages - 1);
  const auto visit = [&](auto&& self, std::size_t depth, std::size_t from) -> void {
    if (depth == pick.size()) {
      plan.bounds = {0};
      for (const std::size_t i : pick) plan.bounds.push_back(places[i]);
      plan.bounds.push_back(view.leaves);
      best = std::min(best, oracle::predict(view, plan, profile).time_s);
      return;
    }
    for (std::size_t i = from; i < places.size(); ++i) {
      pick[depth] = i;
      self(self, depth + 1, i + 1);
    }
  };
  visit(visit, 0, 0);
  return best;
}

template <class Model>
void check_against_every_partition(std::size_t stages, std::size_t micro_batches) {
  INFO(stages, " stages, ", micro_batches, " micro-batches");
  const auto view = oracle::view_of<Model>("model");
  const auto profile = skewed_profile<Model>();
  const oracle::CutSearch found = oracle::search_cuts(view, pipeline(stages, micro_batches), profile);
  const double fastest = exhaustive_best(view, pipeline(stages, micro_batches), profile);
  CHECK(found.best.time_s == doctest::Approx(fastest).epsilon(1e-12));
  CHECK(found.best.time_s <= found.balanced.time_s);
  CHECK(found.balanced.plan.bounds == oracle::balanced_bounds<Model>(stages));
  REQUIRE(found.best.plan.bounds.size() == stages + 1);
  for (std::size_t s = 1; s < stages; ++s) {  // places hpf::Cuts accepts
    CHECK(detail::layer_positions<Model>::can_cut_at(found.best.plan.bounds[s]));
    CHECK(found.best.plan.bounds[s] > found.best.plan.bounds[s - 1]);
  }
  CHECK(oracle::best_cuts<Model>(profile, stages, micro_batches, 16) == found.best.plan.bounds);
}

}  // namespace

TEST_CASE("best cuts: the fastest partition of every one, found with few predictions") {
  for (const std::size_t stages : {2, 3, 4}) {
    for (const std::size_t micro_batches : {1, 4}) {
      check_against_every_partition<Convs>(stages, micro_batches);
      check_against_every_partition<Repeated>(stages, micro_batches);
    }
  }
  // Where layer times do not follow FLOPs the search beats Balanced<S>'s cuts.
  const auto found = oracle::search_cuts(oracle::view_of<Convs>("convs"), pipeline(2, 4), skewed_profile<Convs>());
  CHECK(found.best.time_s < 0.9 * found.balanced.time_s);
  CHECK(found.best.plan.bounds != found.balanced.plan.bounds);
}

TEST_CASE("best cuts: the places a stage may begin, the type to name, and too many stages") {
  const auto view = oracle::view_of<Repeated>("repeated");
  const std::vector<std::size_t> places = oracle::cut_candidates(view);
  CHECK(places.size() + 1 == view.cut_places);
  for (const std::size_t leaf : places) CHECK(detail::layer_positions<Repeated>::can_cut_at(leaf));
  CHECK(oracle::cuts_type({0, 4, 9, 12}) == "hpf::Cuts<4, 9>");
  CHECK(oracle::cuts_type({0, 12}) == "hpf::Cuts<>");
  CHECK_THROWS_WITH_AS(oracle::search_cuts(view, pipeline(view.cut_places + 1, 1), skewed_profile<Repeated>()),
                       doctest::Contains("places to cut"), std::invalid_argument);
}

TEST_CASE("ranking with searched cuts: every pipeline at least as fast as at Balanced<S>'s cuts") {
  const auto view = oracle::view_of<Convs>("convs");
  const auto profile = skewed_profile<Convs>();
  oracle::SearchOptions balanced, searched;
  searched.search_cuts = true;
  const auto plain = oracle::rank_strategies(view, 4, 16, profile, balanced);
  const auto better = oracle::rank_strategies(view, 4, 16, profile, searched);
  REQUIRE(plain.size() == better.size());
  std::size_t matched = 0, faster = 0;
  for (const auto& b : better) {
    for (const auto& p : plain) {
      if (p.plan.describe() != b.plan.describe()) continue;
      ++matched;
      CHECK(b.time_s <= p.time_s);
      faster += b.time_s < p.time_s ? 1 : 0;
    }
  }
  CHECK(matched == plain.size());
  CHECK(faster > 0);
}
