// SPDX-License-Identifier: MIT
// Gradients summed per host first (StepOptions::hierarchy): which host layouts keep the ordered
// reduction's tree, the bits of one process for the ordered reduction and one sum on every rank
// for MPI's allreduce, in whole buckets and in pieces, and the training log's word for it. Here
// every rank is on one host, so `on` makes one host of all replicas; scripts/fabric runs the same
// test on emulated hosts (tests/fabric/test_hierarchy.sh).
#include <hpf/hpf.hpp>

#include <support/equivalence.hpp>
#include <support/shard_gradients.hpp>

#include <doctest/doctest.h>

#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace {
using Place = hpf::comm::HostGroups::Place;

/// in_aligned_block on every rank of hosts of the given sizes holding consecutive ranks.
bool consecutive_hosts_aligned(const std::vector<int>& sizes) {
  int ranks = 0, largest = 0;
  for (const int s : sizes) ranks += s, largest = std::max(largest, s);
  int lowest = 0;
  for (const int s : sizes) {
    for (int h = 0; h < s; ++h) {
      const Place p{.rank = lowest + h, .ranks = ranks, .host_rank = h, .host_size = s, .lowest_on_host = lowest,
                    .largest_host = largest};
      if (!hpf::comm::HostGroups::in_aligned_block(p)) return false;
    }
    lowest += s;
  }
  return true;
}
}  // namespace

TEST_CASE("Hosts keep the ordered tree when host h holds ranks [h L, h L + L) for a power of two L") {
  CHECK(consecutive_hosts_aligned({2, 2}));
  CHECK(consecutive_hosts_aligned({2, 2, 2}));
  CHECK(consecutive_hosts_aligned({4, 4, 2}));  // the last host may hold fewer
  CHECK(consecutive_hosts_aligned({1, 1, 1}));
  CHECK_FALSE(consecutive_hosts_aligned({3, 3}));     // not a power of two
  CHECK_FALSE(consecutive_hosts_aligned({2, 4}));     // a host before the last holds fewer
  CHECK_FALSE(consecutive_hosts_aligned({4, 2, 4}));
  // Round-robin placement: ranks 0 and 2 on one host, 1 and 3 on the other.
  CHECK_FALSE(hpf::comm::HostGroups::in_aligned_block(
      {.rank = 2, .ranks = 4, .host_rank = 1, .host_size = 2, .lowest_on_host = 0, .largest_host = 2}));
}

TEST_CASE("This world's hosts: one leader each, the hosts' count the same on every rank") {
  const hpf::comm::Communicator world;
  const hpf::comm::HostGroups hosts = hpf::comm::HostGroups::of(world);
  const std::vector<bool> near = world.ranks_on_this_host();
  CHECK(hosts.host.size() == static_cast<int>(std::count(near.begin(), near.end(), true)));
  CHECK(hosts.largest_host >= hosts.host.size());
  if (hosts.leader()) CHECK(hosts.leaders.size() == hosts.hosts);
  if (!world.spans_hosts()) {
    CHECK(hosts.hosts == 1);
    CHECK(hosts.aligned);
    CHECK(hosts.describe() == "1 host x " + std::to_string(world.size()) + (world.size() == 1 ? " rank" : " ranks"));
  }
}

TEST_CASE("Summed per host first: one process's bits (ordered), one sum on every rank (allreduce)") {
  const hpf::comm::Communicator world;
  const std::size_t n = 10007, replicas = static_cast<std::size_t>(world.size());
  const std::vector<float> expected = hpf_test::one_process(replicas, n);
  const auto ordered = hpf::GradientReduction::ordered, allreduce = hpf::GradientReduction::allreduce;
  for (const auto hierarchy : {hpf::HostHierarchy::on, hpf::HostHierarchy::automatic}) {
    for (const std::size_t piece_bytes : {std::size_t{0}, std::size_t{1000}, std::size_t{4096}}) {
      CAPTURE(piece_bytes);
      CHECK(hpf_test::same_bits(hpf_test::reduce(world, n, 1, ordered, 16384, piece_bytes, hierarchy), expected));
      // MPI's order: close to one process's sum, and the same bits on every rank.
      std::vector<float> mine = hpf_test::reduce(world, n, 1, allreduce, 16384, piece_bytes, hierarchy);
      REQUIRE(mine.size() == n);
      for (std::size_t i = 0; i < n; i += 97) CHECK(mine[i] == doctest::Approx(expected[i]).epsilon(1e-5));
      std::vector<float> first = mine;
      hpf_test::broadcast_vector(world, first);
      CHECK(hpf_test::same_bits(mine, first));
    }
  }
  // Parked shards (several per replica) stay flat, with the same bits.
  CHECK(hpf_test::same_bits(hpf_test::reduce(world, n, 2, ordered, 16384, 0, hpf::HostHierarchy::on),
                            hpf_test::one_process(replicas * 2, n)));
}

TEST_CASE("Exchanged as bf16: one process's bits of rounded shards, flat, scattered, per host, whole and in pieces") {
  const hpf::comm::Communicator world;
  const std::size_t n = 10007, replicas = static_cast<std::size_t>(world.size());
  const auto ordered = hpf::GradientReduction::ordered;
  const auto bf16 = hpf::ExchangePrecision::bf16;
  const std::vector<float> expected = hpf_test::one_process(replicas, n, replicas > 1);
  if (replicas > 1) {  // the rounding is there: not the float sum
    const std::vector<float> in_float = hpf_test::one_process(replicas, n);
    std::size_t differ = 0;
    for (std::size_t i = 0; i < n; ++i) differ += expected[i] != in_float[i];
    CHECK(differ > n / 2);
  }
  for (const auto hierarchy : {hpf::HostHierarchy::off, hpf::HostHierarchy::on, hpf::HostHierarchy::automatic}) {
    for (const std::size_t piece_bytes : {std::size_t{0}, std::size_t{1000}, std::size_t{4096}}) {
      CAPTURE(piece_bytes);
      CHECK(hpf_test::same_bits(hpf_test::reduce(world, n, 1, ordered, 16384, piece_bytes, hierarchy, bf16), expected));
    }
  }
  // Every other rank, as one stage's replicas in a pipeline of 2: on 2 emulated hosts x 3 ranks
  // a host of 2 and a host of 1, whose leader's own gradient, rounded, is its host's sum.
  const hpf::comm::Communicator half = world.split(world.rank() % 2, world.rank());
  const auto members = static_cast<std::size_t>(half.size());
  CHECK(hpf_test::same_bits(hpf_test::reduce(half, n, 1, ordered, 16384, 0, hpf::HostHierarchy::on, bf16),
                            hpf_test::one_process(members, n, members > 1)));
  // Parked shards (several per replica) are rounded where they are parked: the same bits as
  // that many replicas.
  CHECK(hpf_test::same_bits(hpf_test::reduce(world, n, 2, ordered, 16384, 0, hpf::HostHierarchy::on, bf16),
                            hpf_test::one_process(replicas * 2, n, true)));
  // MPI's allreduce adds in its own order: no bf16 exchange to offer there.
  if (replicas > 1) {
    CHECK_THROWS_WITH_AS(hpf_test::reduce(world, n, 1, hpf::GradientReduction::allreduce, 16384, 0,
                                          hpf::HostHierarchy::off, bf16),
                         doctest::Contains("needs float gradients and the ordered reduction"), std::invalid_argument);
  }
}

TEST_CASE("Exchanged as bf16: the buckets' messages carry half the bytes") {
  const hpf::comm::Communicator world;
  const auto bucket_bytes = [&](hpf::ExchangePrecision precision) {
    hpf::trace::Recorder recorder(4096);
    hpf::trace::activate(&recorder, false);
    hpf_test::reduce(world, 10000, 1, hpf::GradientReduction::ordered, 40000, 0, hpf::HostHierarchy::off, precision);
    hpf::trace::activate(nullptr, false);
    std::int64_t bytes = 0;
    for (const hpf::trace::Event& e : recorder.events()) {
      if (e.track == hpf::trace::Track::collective && std::string(e.name) == "allreduce") bytes += e.tags.bytes;
    }
    return bytes;
  };
  const bool travels = world.size() > 1;  // one replica: no bucket at all
  CHECK(bucket_bytes(hpf::ExchangePrecision::full) == (travels ? 40000 : 0));
  CHECK(bucket_bytes(hpf::ExchangePrecision::bf16) == (travels ? 20000 : 0));
}

TEST_CASE("The timeline has a row per phase: gather, broadcast in host; scatter and collect among 3 or more") {
  const hpf::comm::Communicator world;
  // The collective spans one reduction records on this rank, all of them closed.
  const auto rows = [&](hpf::GradientReduction reduction, hpf::HostHierarchy hierarchy) {
    hpf::trace::Recorder recorder(4096);
    hpf::trace::activate(&recorder, false);
    hpf_test::reduce(world, 10007, 1, reduction, 16384, 0, hierarchy);
    hpf::trace::activate(nullptr, false);
    std::set<std::string> names;
    for (const hpf::trace::Event& e : recorder.events()) {
      CHECK(e.end >= e.begin);
      if (e.track == hpf::trace::Track::collective) names.emplace(e.name);
    }
    return names;
  };
  const auto ordered = hpf::GradientReduction::ordered, allreduce = hpf::GradientReduction::allreduce;
  const bool many = world.size() > 1, aligned = hpf::comm::HostGroups::of(world).aligned;
  // Summed per host: every rank of a host takes part in the gather to its leader and in the
  // broadcast back (here, unless on emulated hosts, one host of every replica; the ordered
  // reduction only on aligned hosts).
  CHECK(rows(ordered, hpf::HostHierarchy::on).count("gather in host") == (many && aligned ? 1U : 0U));
  CHECK(rows(ordered, hpf::HostHierarchy::on).count("broadcast in host") == (many && aligned ? 1U : 0U));
  CHECK(rows(allreduce, hpf::HostHierarchy::on).count("reduce in host") == (many ? 1U : 0U));
  if (!world.spans_hosts()) CHECK(rows(ordered, hpf::HostHierarchy::on).count("scatter") == 0);  // no other host
  // Flat: scattered and collected among 3 or more, one allgather between 2 (no phase rows).
  const std::set<std::string> flat = rows(ordered, hpf::HostHierarchy::off);
  CHECK(flat.count("scatter") == (world.size() >= 3 ? 1U : 0U));
  CHECK(flat.count("collect") == (world.size() >= 3 ? 1U : 0U));
  CHECK(flat.count("allreduce") == (many ? 1U : 0U));  // each bucket's own span
}

TEST_CASE("The training log says where gradients are summed per host first") {
  const hpf::comm::Communicator world;
  using Model = hpf::zoo::Mlp;
  hpf::TrainOptions o;
  o.batch = 24;
  o.evaluate = false;
  o.progress = hpf::ProgressMode::none;
  o.steps_per_epoch = 1;
  o.hierarchy = hpf::HostHierarchy::on;
  std::ostringstream log;
  o.log = &log;
  hpf::fit<Model, hpf::DataParallel>(world, o, hpf_test::synthetic_source<Model>(24));
  const hpf::comm::HostGroups hosts = hpf::comm::HostGroups::of(world);
  if (world.rank() == 0 && world.size() > 1) {
    INFO(log.str());
    const std::string said = hosts.aligned ? "summed per host first (" + hosts.describe() + ")"
                                           : "flat: the ordered reduction sums per host only where";
    CHECK(log.str().find(said) != std::string::npos);
  }
  if (world.size() == 1) CHECK(log.str().find("gradient exchange") == std::string::npos);
  o.exchange_precision = hpf::ExchangePrecision::bf16;
  std::ostringstream bf16;
  o.log = &bf16;
  hpf::fit<Model, hpf::DataParallel>(world, o, hpf_test::synthetic_source<Model>(24));
  CHECK((bf16.str().find(", exchanged as bf16") != std::string::npos) == (world.rank() == 0 && world.size() > 1));
  o.exchange_precision = hpf::ExchangePrecision::full;
  o.hierarchy = hpf::HostHierarchy::off;
  std::ostringstream flat;
  o.log = &flat;
  hpf::fit<Model, hpf::DataParallel>(world, o, hpf_test::synthetic_source<Model>(24));
  CHECK(flat.str().find("per host") == std::string::npos);
}
