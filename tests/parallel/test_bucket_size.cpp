// SPDX-License-Identifier: MIT
// The automatic gradient bucket size: the rule, the oracle's exchange cost it weighs, the line the
// training log gives per stage, and bit-for-bit training with it at 1, 2 and 4 ranks.
#include <hpf/hpf.hpp>

#include <support/equivalence.hpp>

#include <doctest/doctest.h>

#include <cmath>
#include <sstream>
#include <string>

namespace {
using Model = hpf::zoo::Mlp;
constexpr std::size_t kib = 1024;

hpf::TrainOptions options() {
  hpf::TrainOptions o;
  o.batch = 24;
  o.micro_batches = 2;
  o.network.seed = 3;
  o.data_seed = 4;
  o.evaluate = false;
  o.progress = hpf::ProgressMode::none;
  o.steps_per_epoch = 2;
  return o;
}
}  // namespace

TEST_CASE("Automatic bucket size: an eighth of the gradient without a cost, sqrt(G alpha / beta) with one, within bounds") {
  using hpf::choose_bucket_bytes;
  CHECK(choose_bucket_bytes(12345, 1 << 20) == 12345);                  // a size given is kept
  CHECK(choose_bucket_bytes(hpf::automatic_bucket_bytes, 8 << 20) == 1 << 20);  // 8 MiB in 8
  CHECK(choose_bucket_bytes(0, 80 << 20) == hpf::largest_automatic_bucket);
  CHECK(choose_bucket_bytes(0, 100 * kib) == hpf::smallest_automatic_bucket);
  CHECK(choose_bucket_bytes(0, 10 * kib) == 10 * kib);  // never more than the gradient
  CHECK(choose_bucket_bytes(0, 0) == 1);
  // 1 MiB of gradients, 100 us + 1 ns per byte: sqrt(2^20 x 1e5) = 323,817 bytes.
  const hpf::ExchangeCost cost{.alpha_s = 100e-6, .beta_s_per_byte = 1e-9};
  CHECK(choose_bucket_bytes(0, 1 << 20, cost) == 323817);
  // A cheaper start per bucket: smaller buckets, down to the floor.
  CHECK(choose_bucket_bytes(0, 1 << 20, {.alpha_s = 1e-6, .beta_s_per_byte = 1e-9}) == hpf::smallest_automatic_bucket);
  CHECK_FALSE(hpf::ExchangeCost{.alpha_s = 0, .beta_s_per_byte = 1e-9}.known());
  CHECK(hpf::describe_bucket_bytes(0, 1 << 20, cost, 323817) ==
        "316 KiB (automatic: 1.0 MiB of gradients, exchange 100 us + 1.05e+03 us/MiB)");
  CHECK(hpf::describe_bucket_bytes(0, 8 << 20, {}, 1 << 20) == "1.0 MiB (automatic: 8.0 MiB of gradients, no exchange cost known)");
  CHECK(hpf::describe_bucket_bytes(4096, 8 << 20, {}, 4096) == "4 KiB (bucket_bytes as given)");
}

TEST_CASE("The oracle's exchange cost of a bucket is the profile's line: the other copy for 2, 2 (R - 1) parts of 1/R for more") {
  hpf::oracle::MachineProfile profile;
  profile.cluster = hpf::oracle::Cluster{.name = "test", .ranks_per_node = 1, .intra = {}, .inter = {0, 0, 50e-6, 2e-9}};
  const hpf::ExchangeCost two = hpf::oracle::exchange_cost(profile, 2, 1, hpf::GradientReduction::ordered);
  CHECK(two.alpha_s == doctest::Approx(50e-6));
  CHECK(two.beta_s_per_byte == doctest::Approx(2e-9));
  // 4 replicas: scattered and collected, 2 x 3 messages of a quarter of the bucket.
  const hpf::ExchangeCost ordered = hpf::oracle::exchange_cost(profile, 4, 1, hpf::GradientReduction::ordered);
  CHECK(ordered.alpha_s == doctest::Approx(6 * 50e-6));
  CHECK(ordered.beta_s_per_byte == doctest::Approx(6 * 2e-9 / 4));
  CHECK_FALSE(hpf::oracle::exchange_cost(profile, 1, 1, hpf::GradientReduction::ordered).known());  // nothing to exchange
}

TEST_CASE("Summed per host first, the oracle's bucket crosses hosts once per other host") {
  hpf::oracle::MachineProfile profile;
  const hpf::oracle::Regime intra{0, 0, 5e-6, 0.1e-9}, inter{0, 0, 50e-6, 2e-9};
  profile.cluster = hpf::oracle::Cluster{.name = "test", .ranks_per_node = 2, .intra = intra, .inter = inter};
  const auto ordered = hpf::GradientReduction::ordered;
  // 4 replicas on 2 nodes: the leader gathers 1 copy inside, exchanges with 1 other leader,
  // broadcasts 1 level down; without the hierarchy every rank exchanges over the link with 3.
  const hpf::ExchangeCost summed = hpf::oracle::exchange_cost(profile, 4, 1, ordered);
  CHECK(summed.alpha_s == doctest::Approx(2 * 5e-6 + 50e-6));
  CHECK(summed.beta_s_per_byte == doctest::Approx(2 * 0.1e-9 + 2e-9));
  const hpf::ExchangeCost flat = hpf::oracle::exchange_cost(profile, 4, 1, ordered, hpf::HostHierarchy::off);
  CHECK(flat.alpha_s == doctest::Approx(6 * 50e-6));
  // 2 stages on nodes of 2 ranks: a node holds one replica of each stage, nothing to sum there.
  CHECK(hpf::oracle::exchange_cost(profile, 4, 2, ordered).alpha_s == doctest::Approx(6 * 50e-6));
  const auto spread = hpf::oracle::detail::host_spread(profile, 4, 1);
  CHECK(spread.per_host == 2);
  CHECK(spread.hosts == 2);
  // 3 replicas per node: the ordered reduction stays flat (not a power of two), MPI's sums per node.
  profile.cluster->ranks_per_node = 3;
  CHECK_FALSE(hpf::oracle::detail::summed_per_host(hpf::HostHierarchy::automatic, hpf::oracle::detail::host_spread(profile, 6, 1), ordered));
  CHECK(hpf::oracle::detail::summed_per_host(hpf::HostHierarchy::automatic, hpf::oracle::detail::host_spread(profile, 6, 1),
                                             hpf::GradientReduction::allreduce));
}

TEST_CASE("Training says each stage's buckets in its log, and trains bit for bit as one process with them") {
  const hpf::comm::Communicator world;
  const auto source = hpf_test::synthetic_source<Model>(24 * 4);
  std::ostringstream log;
  hpf::TrainOptions o = options();
  o.log = &log;
  const std::size_t gradient_bytes = Model::cost.parameters * sizeof(float);
  hpf::fit<Model, hpf::DataParallel>(world, o, source);
  const std::string expected = "hpf: gradient exchange, stage 0: 8 buckets of " +
                               hpf::describe_bucket_bytes(0, gradient_bytes, {}, hpf::choose_bucket_bytes(0, gradient_bytes));
  if (world.rank() == 0 && world.size() > 1) {
    CHECK(log.str().find(expected) != std::string::npos);
  } else {
    CHECK(log.str().find("gradient exchange") == std::string::npos);  // one replica: nothing to exchange
  }

  // A cost makes fewer, larger buckets here (sqrt(2.68 MB x 1e5) = 517 kB: 6 buckets).
  std::ostringstream costed;
  o.log = &costed;
  o.exchange_cost = {.alpha_s = 100e-6, .beta_s_per_byte = 1e-9};
  hpf::fit<Model, hpf::DataParallel>(world, o, source);
  if (world.rank() == 0 && world.size() > 1) {
    INFO(costed.str());
    CHECK(costed.str().find("stage 0: 6 buckets of 505 KiB") != std::string::npos);
  }

  // The automatic buckets keep training bit for bit as one process, also in pieces across hosts.
  hpf::TrainOptions reference = options();
  reference.log = nullptr;
  reference.steps_per_epoch = 0;  // all 4
  hpf_test::check_strategy_all<Model, hpf::DataParallel>(reference, source, 4);
  reference.exchange_piece_bytes = 3000;
  reference.pieces_on_one_host = true;
  hpf_test::check_strategy_all<Model, hpf::DataParallel>(reference, source, 4);
}

TEST_CASE("A machine profile that cannot be read stops every rank of a named strategy, naming the file") {
  const hpf::comm::Communicator world;
  hpf::TrainOptions o = options();
  o.log = nullptr;
  o.oracle_profile = "/nonexistent/profile.json";
  CHECK_THROWS_WITH_AS((hpf::fit<Model, hpf::DataParallel>(world, o, hpf_test::synthetic_source<Model>(24 * 4))),
                       doctest::Contains("cannot read the machine profile '/nonexistent/profile.json'"), hpf::comm::UsageError);
}
