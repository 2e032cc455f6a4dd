// SPDX-License-Identifier: MIT
// hpf::Auto: fit trains with the strategy the oracle ranks first for the world size (among the
// compiled stage counts), the same on every rank; without a profile every rank stops naming it.
#include <hpf/hpf.hpp>

#include <support/equivalence.hpp>

#include <doctest/doctest.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <unistd.h>

namespace {

using Model = hpf::zoo::Cnn;

hpf::TrainOptions options() {
  hpf::TrainOptions o;
  o.batch = 32;
  o.evaluate = false;
  o.log = nullptr;
  o.progress = hpf::ProgressMode::none;
  o.steps_per_epoch = 3;
  return o;
}

/// A machine profile with this machine's compute calibrated for the CNN (communication free),
/// written by rank 0.
std::string write_profile(const hpf::comm::Communicator& world) {
  // One file per job (tests of several rank counts run at once): named by rank 0's process.
  const std::string path = hpf::comm::broadcast_text(
      world, (std::filesystem::temp_directory_path() / ("hpf-test-auto-" + std::to_string(::getpid()) + ".json")).string(), 0);
  if (world.rank() == 0) {
    std::ofstream(path) << R"({"format": "hpf-machine-profile", "version": 1, "label": "test", "host": {"cores": 64}})";
    hpf::oracle::MachineProfile profile = hpf::oracle::load_profile(path);
    hpf::oracle::calibrate<Model>(profile, {.batches = {1, 2, 4, 8, 16, 32}, .repeats = 1});
    hpf::oracle::save_compute(profile, path);
  }
  world.barrier();
  return path;
}

/// How the log and TrainReport::chosen_strategy name a plan: a pipeline with its cuts.
std::string described(const hpf::oracle::Prediction& p) {
  return p.plan.describe() + (p.plan.stages > 1 ? ", " + hpf::oracle::cuts_type(p.plan.bounds) : "");
}

}  // namespace

TEST_CASE("Auto trains with the oracle's first choice among the compiled stage counts") {
  const hpf::comm::Communicator world;
  hpf::TrainOptions o = options();
  o.oracle_profile = write_profile(world);
  o.oracle_canary_seconds = 0;  // the profile as written: the same ranking as rank_strategies' below
  const auto report = hpf::fit<Model, hpf::Auto<1, 2>>(world, o, hpf_test::synthetic_source<Model>(96));
  CHECK(std::isfinite(report.epochs.back().loss));
  CHECK(report.predicted_step_seconds > 0);

  // The same ranking, here: the first strategy with 1 or 2 stages.
  const auto profile = hpf::oracle::load_profile(o.oracle_profile);
  const auto ranked = hpf::oracle::rank_strategies(hpf::oracle::view_of<Model>("cnn"), static_cast<std::size_t>(world.size()),
                                                   o.batch, profile);
  const auto first = std::find_if(ranked.begin(), ranked.end(), [](const auto& p) { return p.plan.stages <= 2; });
  REQUIRE(first != ranked.end());
  // Rank 0 timed the profile's units; every rank reads the same file, so the same choice.
  CHECK(report.chosen_strategy == described(*first));
  CHECK(report.predicted_step_seconds == doctest::Approx(first->time_s));
  world.barrier();  // every rank has read it
  if (world.rank() == 0) std::filesystem::remove(o.oracle_profile);
}

TEST_CASE("AutoAmong trains the oracle's first choice among the compiled partitions") {
  const hpf::comm::Communicator world;
  hpf::TrainOptions o = options();
  o.oracle_profile = write_profile(world);
  o.oracle_canary_seconds = 0;
  constexpr std::size_t leaves = Model::leaves;
  const auto report =
      hpf::fit<Model, hpf::AutoAmong<hpf::Cuts<>, hpf::Cuts<3>, hpf::Balanced<2>>>(world, o, hpf_test::synthetic_source<Model>(96));
  CHECK(std::isfinite(report.epochs.back().loss));

  // The same search over exactly those three partitions, here.
  const auto view = hpf::oracle::view_of<Model>("cnn");
  hpf::oracle::SearchOptions search;
  search.partitions = {{0, leaves}, {0, 3, leaves}, view.balanced_bounds(2)};
  const auto ranked = hpf::oracle::rank_strategies(view, static_cast<std::size_t>(world.size()), o.batch,
                                                   hpf::oracle::load_profile(o.oracle_profile), search);
  REQUIRE(!ranked.empty());
  for (const auto& p : ranked) CHECK(std::find(search.partitions.begin(), search.partitions.end(), p.plan.bounds) != search.partitions.end());
  CHECK(report.chosen_strategy == described(ranked.front()));
  CHECK(report.predicted_step_seconds == doctest::Approx(ranked.front().time_s));
  world.barrier();
  if (world.rank() == 0) std::filesystem::remove(o.oracle_profile);
}

TEST_CASE("Auto's canary rescales a profile whose compute is 20 times too slow before it chooses") {
  const hpf::comm::Communicator world;
  hpf::TrainOptions o = options();
  o.oracle_profile = write_profile(world);
  if (world.rank() == 0) {
    auto slow = hpf::oracle::load_profile(o.oracle_profile);
    hpf::oracle::rescale_compute(slow, 20);
    hpf::oracle::save_compute(slow, o.oracle_profile);
  }
  world.barrier();
  std::ostringstream log;
  o.log = world.rank() == 0 ? &log : nullptr;
  const auto report = hpf::fit<Model, hpf::Auto<1, 2>>(world, o, hpf_test::synthetic_source<Model>(96));
  const auto profile = hpf::oracle::load_profile(o.oracle_profile);
  const auto ranked = hpf::oracle::rank_strategies(hpf::oracle::view_of<Model>("cnn"), static_cast<std::size_t>(world.size()),
                                                   o.batch, profile);
  const auto first = std::find_if(ranked.begin(), ranked.end(), [](const auto& p) { return p.plan.stages <= 2; });
  REQUIRE(first != ranked.end());
  // About 1/20 of the slow profile's prediction; a factor of 4 either way for a busy host.
  CHECK(report.predicted_step_seconds < first->time_s / 5);
  CHECK(report.predicted_step_seconds > first->time_s / 80);
  if (world.rank() == 0) {
    // Every rank ran it: the fastest and the slowest rank's ratio, the slowest applied.
    const std::string text = log.str();
    CHECK(text.find("hpf::Auto: canary on " + std::to_string(world.size())) != std::string::npos);
    const auto at = text.find("samples took ");
    REQUIRE(at != std::string::npos);
    double fastest = 0, slowest = 0;
    REQUIRE(std::sscanf(text.c_str() + at, "samples took %lf-%lf x", &fastest, &slowest) == 2);
    CHECK(fastest > 0);
    CHECK(fastest <= slowest);
    if (world.size() == 1) CHECK(fastest == slowest);
  }
  world.barrier();
  if (world.rank() == 0) std::filesystem::remove(o.oracle_profile);
}

TEST_CASE("Auto without a machine profile stops every rank with a message naming the setting") {
  const hpf::comm::Communicator world;
  hpf::TrainOptions o = options();
  o.oracle_profile = "";
  unsetenv("HPF_ORACLE_PROFILE");
  CHECK_THROWS_WITH_AS((hpf::fit<Model, hpf::Auto<>>(world, o, hpf_test::synthetic_source<Model>(96))),
                       doctest::Contains("hpf::Auto needs a machine profile: TrainOptions::oracle_profile or HPF_ORACLE_PROFILE"),
                       hpf::comm::UsageError);
  o.oracle_profile = "/nonexistent/profile.json";
  CHECK_THROWS_WITH_AS((hpf::fit<Model, hpf::Auto<>>(world, o, hpf_test::synthetic_source<Model>(96))),
                       doctest::Contains("cannot read the machine profile '/nonexistent/profile.json'"), hpf::comm::UsageError);
}

TEST_CASE("Auto with several shards per replica, which the oracle does not plan, stops every rank") {
  const hpf::comm::Communicator world;
  hpf::TrainOptions o = options();
  o.shards_per_replica = 2;
  CHECK_THROWS_WITH_AS((hpf::fit<Model, hpf::Auto<>>(world, o, hpf_test::synthetic_source<Model>(96))),
                       doctest::Contains("hpf::Auto: the oracle plans one data shard per replica"), hpf::comm::UsageError);
}
