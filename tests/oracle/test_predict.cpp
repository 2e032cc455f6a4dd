// SPDX-License-Identifier: MIT
// The oracle's prediction against schedules worked out by hand, with a profile written here, and
// the machine profile's file format.
#include <hpf/hpf.hpp>
#include <hpf/oracle/closed_form.hpp>
#include <hpf/oracle/model_view.hpp>
#include <hpf/oracle/predict.hpp>
#include <hpf/oracle/recommend.hpp>

#include <doctest/doctest.h>
#include <support/tiny_oracle.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <unistd.h>
#include <vector>

namespace {

using namespace hpf;
using hpf_test::linear_profile;
using hpf_test::plan;
using hpf_test::Tiny;


}  // namespace

TEST_CASE("one process: the step is the sum of the units' forward and backward") {
  const auto p = oracle::predict(oracle::view_of<Tiny>("tiny"), plan(1, 1, 8, 2, Schedule::one_f_one_b), linear_profile());
  // 6 units x (1 + 2) ms x 4 samples x 2 micro-batches.
  CHECK(p.time_s == doctest::Approx(0.144));
  CHECK(p.compute_s == doctest::Approx(0.144));
  CHECK(p.bubble_s == doctest::Approx(0).epsilon(1e-12));
}

TEST_CASE("two stages: the bubble is (S - 1) micro-batch forward and backward under both schedules") {
  const auto view = oracle::view_of<Tiny>("tiny");
  const auto bounds = oracle::balanced_bounds<Tiny>(2);
  // Stage units: count them to know each stage's time per micro-batch.
  std::size_t first_units = 0;
  for (const auto& u : view.units) first_units += oracle::in_stage(u, bounds[0], bounds[1], false) ? 1 : 0;
  const double m = 2;  // samples per micro-batch: 8 / 4
  const double f0 = first_units * 1e-3 * m, b0 = first_units * 2e-3 * m;
  const double f1 = (6 - first_units) * 1e-3 * m, b1 = (6 - first_units) * 2e-3 * m;
  for (const Schedule schedule : {Schedule::gpipe, Schedule::one_f_one_b}) {
    INFO("schedule ", std::string(to_string(schedule)));
    const auto p = oracle::predict(view, plan(2, 1, 8, 4, schedule), linear_profile());
    const double busiest = 4 * std::max(f0 + b0, f1 + b1);
    CHECK(p.compute_s == doctest::Approx(busiest));
    // The busiest stage waits once for the other's forward and once for its backward.
    const double other = f0 + b0 < f1 + b1 ? f0 + b0 : f1 + b1;
    CHECK(p.time_s == doctest::Approx(busiest + other));
    CHECK(p.bubble_s == doctest::Approx(other));
    CHECK(p.transfer_s == doctest::Approx(0).epsilon(1e-12));
  }
}

TEST_CASE("tapes in flight: a schedule that keeps many micro-batches' tapes pays its share of what 8 of them added") {
  const auto view = oracle::view_of<Tiny>("tiny");
  auto profile = linear_profile();
  // Calibrated as a whole model: one micro-batch's tape, and 8 of them in flight.
  const double per_sample = static_cast<double>(oracle::tape_bytes_per_sample(Tiny::input_shape::size, Tiny::cost, sizeof(float)));
  for (auto& [key, t] : profile.units) {
    t.in_flight_forward_ratio = {1.5, 1.5};
    t.in_flight_backward_ratio = {1.25, 1.25};
    t.tape_bytes = {per_sample, 64 * per_sample};
    t.in_flight_bytes = {8 * per_sample, 8 * 64 * per_sample};
  }
  const auto compute = [&](const oracle::Plan& plan, const oracle::MachineProfile& p) { return oracle::predict(view, plan, p).compute_s; };
  // One process, 16 samples: 6 units x (1 + 2) ms per sample as calibrated.
  const double calibrated = 6 * 3e-3 * 16;
  CHECK(compute(plan(1, 1, 16, 1, Schedule::one_f_one_b), profile) == doctest::Approx(calibrated));  // one tape
  CHECK(compute(plan(1, 1, 16, 8, Schedule::one_f_one_b), profile) == doctest::Approx(calibrated));  // one reused
  // GPipe keeps all 8: the measured factors whole; 4 of them: 3/7 of the way from one tape to 8.
  CHECK(compute(plan(1, 1, 16, 8, Schedule::gpipe), profile) == doctest::Approx(6 * 16 * (1.5e-3 + 2.5e-3)));
  const double share = 3.0 / 7;
  const double four = 6 * 16 * (1e-3 * (1 + 0.5 * share) + 2e-3 * (1 + 0.25 * share));
  CHECK(compute(plan(1, 1, 16, 4, Schedule::gpipe), profile) == doctest::Approx(four));
  // A host's ranks share its cache: 2 replicas of 4 tapes each on one host hold 8 there; on hosts
  // of their own, 4 each.
  CHECK(compute(plan(1, 2, 32, 4, Schedule::gpipe), profile) == doctest::Approx(6 * 16 * (1.5e-3 + 2.5e-3)));
  auto two_hosts = profile;
  two_hosts.hosts = 2;
  CHECK(compute(plan(1, 2, 32, 4, Schedule::gpipe), two_hosts) == doctest::Approx(four));
  // A cluster's node has as much cache per core as the calibrated host: calibrated on one core,
  // 2 ranks on a node of 16 count 4 tapes each.
  auto cluster = profile;
  cluster.cores = 1;
  cluster.cluster = oracle::Cluster{};
  cluster.cluster->ranks_per_node = 16;
  CHECK(compute(plan(1, 2, 32, 4, Schedule::gpipe), cluster) == doctest::Approx(four));
  // Without the term (hpf-oracle --without tapes-in-flight), the calibrated times.
  oracle::drop_tapes_in_flight(profile);
  CHECK(compute(plan(1, 1, 16, 8, Schedule::gpipe), profile) == doctest::Approx(calibrated));
  // The closed form never had it.
  CHECK(oracle::closed_form(view, plan(1, 1, 16, 8, Schedule::gpipe), two_hosts).compute_s == doctest::Approx(calibrated));
}

TEST_CASE("transfers and the gradient reduction add what the fitted lines say") {
  auto profile = linear_profile();
  profile.comm["p2p_latency"].by_ranks[2] = {{0, 1e30, 1e-3, 0}};      // 1 ms per message
  profile.comm["buckets_ordered"].by_ranks[2] = {{0, 1e30, 5e-3, 0}};  // 5 ms per bucket
  const auto view = oracle::view_of<Tiny>("tiny");
  const auto free = oracle::predict(view, plan(2, 1, 8, 1, Schedule::gpipe), linear_profile());
  const auto paid = oracle::predict(view, plan(2, 1, 8, 1, Schedule::gpipe), profile);
  // One micro-batch: its activation goes forward and its gradient back, both on the critical path.
  CHECK(paid.time_s - free.time_s == doctest::Approx(2e-3));
  CHECK(paid.transfer_s == doctest::Approx(2e-3));

  // Data parallel: all 47 gradients fit one bucket, ready when backward ends: 5 ms exposed.
  const auto replicated = oracle::predict(view, plan(1, 2, 8, 1, Schedule::one_f_one_b), profile);
  CHECK(replicated.reduction_s == doctest::Approx(5e-3));
  // Buckets of 8 parameters (6 buckets): the first ones reduce while backward goes on, so less
  // than 6 x 5 ms is exposed, but at least the last bucket's 5 ms.
  auto small = plan(1, 2, 8, 1, Schedule::one_f_one_b);
  small.bucket_bytes = 8 * sizeof(float);
  const auto bucketed = oracle::predict(view, small, profile);
  CHECK(bucketed.reduction_s >= 5e-3 - 1e-12);
  CHECK(bucketed.reduction_s < 30e-3);
}

TEST_CASE("exchange compute: a replica's copies and sums of its gradient exchange lengthen its backward") {
  auto profile = linear_profile();
  profile.link.compute_s_per_byte = 1e-6;      // 1 us per byte moved in or out
  profile.exchange_sum_s_per_element = 1e-5;  // 10 us per element added
  auto without = profile;
  oracle::drop_exchange_compute(without);
  const auto view = oracle::view_of<Tiny>("tiny");
  const auto extra = [&](const oracle::Plan& p) {
    return oracle::predict(view, p, profile).time_s - oracle::predict(view, p, without).time_s;
  };
  // Tiny's 47 gradients in one bucket, reduced for free by the links (no fits).
  // 2 replicas: a copy of 47 floats out and one in (376 bytes), and both copies of the 47 added.
  const auto two = plan(1, 2, 8, 1, Schedule::one_f_one_b);
  CHECK(extra(two) == doctest::Approx(376e-6 + 94 * 1e-5));
  CHECK(oracle::predict(view, two, profile).reduction_s == doctest::Approx(376e-6 + 94 * 1e-5));
  // 4 replicas: 2 x 3/4 of the bucket in and out (564 bytes), every element added once.
  CHECK(extra(plan(1, 4, 8, 1, Schedule::one_f_one_b)) == doctest::Approx(564e-6 + 47 * 1e-5));
  // Exchanged as bf16: half the bytes moved, the same sums.
  auto bf16 = two;
  bf16.exchange_precision = ExchangePrecision::bf16;
  CHECK(extra(bf16) == doctest::Approx(188e-6 + 94 * 1e-5));
  // One replica exchanges nothing.
  CHECK(extra(plan(1, 1, 8, 1, Schedule::one_f_one_b)) == 0);
  // A reduction slower than what the rank computes for it is exposed as the fit says, not more:
  // the fit's time includes the rank's copies.
  profile.comm["buckets_ordered"].by_ranks[2] = {{0, 1e30, 5e-3, 0}};
  without.comm = profile.comm;
  CHECK(std::abs(extra(two)) < 1e-12);
  CHECK(oracle::predict(view, two, profile).reduction_s == doctest::Approx(5e-3));
}

TEST_CASE("replicas that outnumber the cores reduce as the fit with a core per rank says, scaled") {
  const auto view = oracle::view_of<Tiny>("tiny");
  auto profile = linear_profile();
  profile.cores = 2;
  profile.comm["buckets_ordered"].by_ranks[2] = {{0, 1e30, 5e-3, 0}};   // 5 ms per bucket
  profile.comm["buckets_ordered"].by_ranks[4] = {{0, 1e30, 40e-3, 0}};  // all four polling at once
  profile.comm["buckets_allreduce"].by_ranks[2] = {{0, 1e30, 5e-3, 0}};
  profile.comm["buckets_allreduce"].by_ranks[4] = {{0, 1e30, 40e-3, 0}};
  // What the exchange computes per byte a rank sends or receives: on half a core it takes twice as long.
  profile.link.compute_s_per_byte = 1e-6;
  std::size_t parameters = 0;
  for (const auto& u : view.units) parameters += u.cost.parameters;
  const double gradient_bytes = static_cast<double>(parameters * sizeof(float));
  auto four = plan(1, 4, 8, 1, Schedule::one_f_one_b);
  // Scattered and collected, each rank takes in 2 x 3 / 4 of the gradient instead of the other
  // copy, and sends as much; the computing part of moving those bytes runs on half a core.
  CHECK(oracle::predict(view, four, profile).reduction_s == doctest::Approx(5e-3 * 1.5 + 1e-6 * 2 * 1.5 * gradient_bytes));
  // A ring moves (R - 1) / R of the gradient each way instead of 1 / 2, twice: as much.
  four.reduction = GradientReduction::allreduce;
  CHECK(oracle::predict(view, four, profile).reduction_s == doctest::Approx(5e-3 * 1.5 + 1e-6 * 4 * 0.75 * gradient_bytes));
  // With a core per rank the 4-rank fit holds as measured, and nothing is shared.
  profile.cores = 4;
  four.reduction = GradientReduction::ordered;
  CHECK(oracle::predict(view, four, profile).reduction_s == doctest::Approx(40e-3));
}

TEST_CASE("replicas on separate hosts reduce at the link's streaming rate, as on a cluster") {
  const auto view = oracle::view_of<Tiny>("tiny");
  auto profile = linear_profile();
  profile.comm["p2p_bandwidth"].by_ranks[2] = {{0, 1e30, 1e-3, 0}};    // 1 ms per message of a stream
  profile.comm["buckets_ordered"].by_ranks[2] = {{0, 1e30, 5e-3, 0}};  // the bucket benchmark: 5 ms
  profile.comm["buckets_allreduce"].by_ranks[2] = {{0, 1e30, 5e-3, 0}};
  auto two = plan(1, 2, 8, 1, Schedule::one_f_one_b);
  // One host: the bucket benchmark's fit, as measured there.
  CHECK(oracle::predict(view, two, profile).reduction_s == doctest::Approx(5e-3));
  // A replica per host: each receives the other's bucket over its link, one message.
  profile.hosts = 2;
  CHECK(oracle::predict(view, two, profile).reduction_s == doctest::Approx(1e-3));
  // A ring moves two messages of half the bucket each way.
  two.reduction = GradientReduction::allreduce;
  CHECK(oracle::predict(view, two, profile).reduction_s == doctest::Approx(2e-3));
  // Four replicas on the two hosts, summed per host first: one message between the two leaders
  // (a copy inside a host costs what moving its bytes costs a core: nothing in this profile).
  auto four = plan(1, 4, 8, 1, Schedule::one_f_one_b);
  CHECK(oracle::predict(view, four, profile).reduction_s == doctest::Approx(1e-3));
  // Without: scattered and collected among the four, 2 x 3 messages of a quarter of the bucket.
  four.hierarchy = HostHierarchy::off;
  CHECK(oracle::predict(view, four, profile).reduction_s == doctest::Approx(6e-3));
  // Two stages of two replicas, the pipeline on one host and its replica on the other.
  CHECK(oracle::predict(view, plan(2, 2, 8, 1, Schedule::one_f_one_b), profile).reduction_s ==
        doctest::Approx(1e-3));
}

TEST_CASE("gradients exchanged as bf16: half the bytes of copies and collected sums, hosts' partial sums whole") {
  const auto view = oracle::view_of<Tiny>("tiny");
  auto profile = linear_profile();
  profile.hosts = 2;
  profile.comm["p2p_bandwidth"].by_ranks[2] = {{0, 1e30, 0, 1e-6}};  // 1 us per byte of a stream
  const auto both = [&](oracle::Plan p) {
    const oracle::Prediction full = oracle::predict(view, p, profile);
    p.exchange_precision = ExchangePrecision::bf16;
    return std::pair{full, oracle::predict(view, p, profile)};
  };
  const double gradient = 4.0 * static_cast<double>(Tiny::cost.parameters);
  // A replica per host: the other's copy, in bf16.
  const auto [two, two_bf16] = both(plan(1, 2, 8, 1, Schedule::one_f_one_b));
  CHECK(two.reduction_s == doctest::Approx(1e-6 * gradient));
  CHECK(two_bf16.reduction_s == doctest::Approx(0.5e-6 * gradient));
  // Its memory: 2 bf16 copies and the bf16 gradient it sends, against 2 float copies.
  CHECK(two.stage_memory[0].gradient_buckets == 2 * gradient);
  CHECK(two_bf16.stage_memory[0].gradient_buckets == 1.5 * gradient);
  // Four replicas on two hosts, summed per host first: the leaders' exchange carries the hosts'
  // partial sums as float (copies inside a host cost nothing in this profile).
  auto four = plan(1, 4, 8, 1, Schedule::one_f_one_b);
  const auto [hosts, hosts_bf16] = both(four);
  CHECK(hosts_bf16.reduction_s == doctest::Approx(hosts.reduction_s));
  CHECK(hosts_bf16.stage_memory[0].gradient_buckets == 3.5 * gradient);  // + float room for the partial sums
  // Flat: every scattered and collected message in bf16.
  four.hierarchy = HostHierarchy::off;
  const auto [flat, flat_bf16] = both(four);
  CHECK(flat_bf16.reduction_s == doctest::Approx(0.5 * flat.reduction_s));
  CHECK(flat.reduction_s > 0);
  // The automatic bucket size weighs the cheaper bytes.
  const ExchangeCost cost = oracle::exchange_cost(profile, 2, 1, GradientReduction::ordered);
  const ExchangeCost cost_bf16 =
      oracle::exchange_cost(profile, 2, 1, GradientReduction::ordered, HostHierarchy::automatic, ExchangePrecision::bf16);
  CHECK(cost_bf16.beta_s_per_byte == doctest::Approx(0.5 * cost.beta_s_per_byte));
}

TEST_CASE("bf16 messages between stages: half the bytes of each activation and gradient") {
  const auto view = oracle::view_of<Tiny>("tiny");
  auto profile = linear_profile();
  profile.comm["p2p_latency"].by_ranks[2] = {{0, 1e30, 0, 1e-6}};  // 1 us per byte
  auto p = plan(2, 1, 8, 1, Schedule::one_f_one_b);
  const oracle::Prediction full = oracle::predict(view, p, profile);
  p.stage_precision = ExchangePrecision::bf16;
  const oracle::Prediction bf16 = oracle::predict(view, p, profile);
  // One micro-batch: its activation and its gradient both lie on the step's path.
  CHECK(full.transfer_s > 0);
  CHECK(bf16.transfer_s == doctest::Approx(0.5 * full.transfer_s));
  CHECK(oracle::closed_form(view, p, profile).time_s < oracle::closed_form(view, plan(2, 1, 8, 1, Schedule::one_f_one_b), profile).time_s);
  // The search gives every plan the option.
  oracle::SearchOptions search;
  search.stage_precision = ExchangePrecision::bf16;
  for (const auto& ranked : oracle::rank_strategies(view, 2, 8, profile, search)) {
    CHECK(ranked.plan.stage_precision == ExchangePrecision::bf16);
  }
}

TEST_CASE("resident set: the process, a first stage's share of the data, and the engine's memory") {
  const auto view = oracle::view_of<Tiny>("tiny");
  const auto profile = linear_profile();
  constexpr std::size_t process = 21 << 20, data = 8 << 20;
  // 2 stages x 2 replicas: each first-stage rank keeps half the data set, the last stage none.
  auto p = plan(2, 2, 8, 2, Schedule::one_f_one_b);
  const oracle::Prediction engine_only = oracle::predict(view, p, profile);
  REQUIRE(engine_only.stage_resident_bytes.size() == 2);
  // The engine's memory less the pages it never writes: here, of the gradient buffers, sized for
  // the largest inner output, what the backward never puts in them (at 2 samples a micro-batch).
  for (std::size_t s = 0; s < 2; ++s) {
    const oracle::MemoryBreakdown& m = engine_only.stage_memory[s];
    CHECK(engine_only.stage_resident_bytes[s] == m.resident());
    const bool first = s == 0, last = s == 1;
    const auto facts = oracle::stage_facts(view.units, engine_only.plan.bounds[s], engine_only.plan.bounds[s + 1], last);
    const std::size_t written =
        oracle::stage_gradient_buffers_written(view.units, engine_only.plan.bounds[s], engine_only.plan.bounds[s + 1], first, last);
    CHECK(m.unwritten == (2 * facts.largest_inner_output - written) * 2 * sizeof(float));
  }
  CHECK(engine_only.stage_memory[0].unwritten + engine_only.stage_memory[1].unwritten > 0);
  p.process_bytes = process;
  p.data_bytes = data;
  const oracle::Prediction resident = oracle::predict(view, p, profile);
  CHECK(resident.stage_resident_bytes[0] == process + data / 2 + resident.stage_memory[0].resident());
  CHECK(resident.stage_resident_bytes[1] == process + resident.stage_memory[1].resident());
  CHECK(resident.peak_resident_bytes == std::max(resident.stage_resident_bytes[0], resident.stage_resident_bytes[1]));
  CHECK(resident.peak_memory_bytes == engine_only.peak_memory_bytes);  // the budget still weighs the engine's
  // The search gives every plan the process and the data.
  oracle::SearchOptions search;
  search.process_bytes = process;
  search.data_bytes = data;
  for (const auto& ranked : oracle::rank_strategies(view, 2, 8, profile, search)) {
    CHECK(ranked.stage_resident_bytes.front() == process + data / ranked.plan.replicas + ranked.stage_memory.front().resident());
  }
}

TEST_CASE("the process's resident set is read, and grows with pages it touches") {
  const std::size_t before = hpf::system::resident_set_bytes();
  REQUIRE(before > 0);  // Linux: /proc/self/status
  std::vector<char> pages(std::size_t{64} << 20);
  std::fill(pages.begin(), pages.end(), char{1});
  CHECK(hpf::system::resident_set_bytes() >= before + (std::size_t{60} << 20));
  CHECK(pages[12345] == 1);
}

TEST_CASE("messages on one link queue: GPipe's activations arrive one after another") {
  const auto view = oracle::view_of<Tiny>("tiny");
  const auto bounds = oracle::balanced_bounds<Tiny>(2);
  std::size_t first_units = 0;
  for (const auto& u : view.units) first_units += oracle::in_stage(u, bounds[0], bounds[1], false) ? 1 : 0;
  const double m = 2, f0 = first_units * 1e-3 * m, b0 = first_units * 2e-3 * m;
  const double f1 = (6 - first_units) * 1e-3 * m, b1 = (6 - first_units) * 2e-3 * m;
  auto profile = linear_profile();
  const double message = 30e-3;  // longer than either stage's forward of a micro-batch
  profile.comm["p2p_latency"].by_ranks[2] = {{0, 1e30, message, 0}};
  const auto p = oracle::predict(view, plan(2, 1, 8, 4, Schedule::gpipe), profile);
  // The four activations take the link one after another, the last arrives after 4 messages and
  // the first forward; then the last forward and backward, the four gradients one after another,
  // and the first stage's last backward.
  // Carried side by side they would end at about 186 ms.
  REQUIRE(f0 + 4 * message + f1 + b1 + 4 * message + b0 == doctest::Approx(0.276));
  CHECK(p.time_s >= 0.276);
}

TEST_CASE("messages on one link queue one after another: each arrives its latency after it starts") {
  const oracle::detail::MessageCost message{.latency = 5, .busy = 4};
  oracle::detail::LinkQueue link;
  CHECK(link.send(0, message) == doctest::Approx(5));
  CHECK(link.send(0, message) == doctest::Approx(9));    // starts when the first frees the link, at 4
  CHECK(link.send(20, message) == doctest::Approx(25));  // the link is free again
}

TEST_CASE("the play's events are taken earliest first, equal times in the order they came, past its room too") {
  oracle::detail::EventQueue events(2);
  std::vector<std::pair<double, std::size_t>> taken;
  const auto take = [&] {
    taken.emplace_back(events.earliest_time(), events.earliest_stage());
    events.pop();
  };
  events.push(3, 0);
  events.push(1, 1);
  take();             // 1 (stage 1)
  events.push(3, 2);  // full with one taken: it drops that one, and goes after the 3 that came first
  events.push(2, 3);  // past its room: it grows
  events.push(0.5, 4);
  while (!events.empty()) take();
  events.push(7, 5);  // empty again: starts at the front
  take();
  const std::vector<std::pair<double, std::size_t>> expected{{1, 1}, {0.5, 4}, {2, 3}, {3, 0}, {3, 2}, {7, 5}};
  CHECK(taken == expected);
}

TEST_CASE("the play's passes, each between the receive and the send its stage's place implies, are stage_program") {
  for (const Schedule schedule : {Schedule::gpipe, Schedule::one_f_one_b}) {
    for (std::size_t stages = 1; stages <= 4; ++stages) {
      for (const std::size_t micro : {1, 3, 8}) {
        const oracle::detail::StagePasses programs(schedule, stages, micro);
        for (std::size_t s = 0; s < stages; ++s) {
          const bool first = s == 0, last = s + 1 == stages;
          std::vector<Instruction> played;
          for (const auto pass : programs[s]) {
            const std::uint32_t mb = pass.micro_batch;
            if (pass.backward) {
              if (!last) played.push_back({Op::recv_gradient, mb});
              played.push_back({Op::backward, mb});
              if (!first) played.push_back({Op::send_gradient, mb});
            } else {
              if (!first) played.push_back({Op::recv_activation, mb});
              played.push_back({Op::forward, mb});
              if (!last) played.push_back({Op::send_activation, mb});
            }
          }
          CHECK(played == stage_program(schedule, stages, s, micro));
        }
        CHECK(programs.passes.size() == programs.begin.back());  // every pass written
      }
    }
  }
}

TEST_CASE("hosts emulated on one machine communicate as hosts but share its cores") {
  const auto view = oracle::view_of<Tiny>("tiny");
  auto profile = linear_profile();
  profile.cores = 1;
  profile.hosts = 2;
  // 2 replicas of 4 samples, one per host: 6 units x 3 ms x 4 samples each, on a core of its own.
  const auto apart = oracle::predict(view, plan(1, 2, 8, 1, Schedule::one_f_one_b), profile);
  CHECK(apart.compute_s == doctest::Approx(0.072));
  // Both hosts are namespaces of one single-core machine: the two ranks take turns on its core.
  profile.hosts_share_cores = true;
  const auto shared = oracle::predict(view, plan(1, 2, 8, 1, Schedule::one_f_one_b), profile);
  CHECK(shared.compute_s == doctest::Approx(0.144));
}

TEST_CASE("ranks that share a host's cores evenly: a pipeline's programs end when the cores have done all its work") {
  const auto view = oracle::view_of<Tiny>("tiny");
  // Tiny's 6 units take 3 ms per sample forward and backward: 8 samples are 0.144 s of work.
  struct Case {
    std::size_t cores, stages, replicas;
  };
  for (const Case c : {Case{1, 2, 1}, Case{1, 3, 1}, Case{2, 2, 2}, Case{2, 3, 2}}) {
    INFO("cores ", c.cores, ", stages ", c.stages, ", replicas ", c.replicas);
    auto profile = linear_profile();
    profile.cores = c.cores;
    for (const Schedule schedule : {Schedule::gpipe, Schedule::one_f_one_b}) {
      const auto p = oracle::predict(view, plan(c.stages, c.replicas, 8 * c.replicas, 4, schedule), profile);
      // The played programs (transfers are free here) against the work done at the cores' pace:
      // whichever stages compute, the replicas' ranks share the cores and never leave one idle.
      const double work = 0.144 * static_cast<double>(c.replicas) / static_cast<double>(c.cores);
      CHECK(p.time_s - p.reduction_s - p.other_s == doctest::Approx(work).epsilon(1e-9));
      CHECK(p.compute_s + p.bubble_s == doctest::Approx(work).epsilon(1e-9));  // transfers taken as free
      CHECK(p.transfer_s == doctest::Approx(0).epsilon(1e-12));
    }
  }
}

TEST_CASE("ranking: every feasible strategy, fastest first, each with its reason; a budget moves the big ones last") {
  const auto view = oracle::view_of<Tiny>("tiny");
  const auto ranked = oracle::rank_strategies(view, 2, 8, linear_profile());
  // Data parallel 1 x 2 with M = 1, 2, 4; pipelines 2 x 1 with M = 1, 2, 4, 8 under two schedules.
  CHECK(ranked.size() == 3 + 8);
  for (std::size_t i = 1; i < ranked.size(); ++i) CHECK(ranked[i - 1].time_s <= ranked[i].time_s);
  CHECK(ranked.front().plan.stages == 1);  // free communication: replicas never idle
  for (const auto& p : ranked) CHECK(!p.reason.empty());
  // Tiny's convolution is most of its FLOPs but a sixth of its (made-up) time here: Balanced<2>
  // gives the second stage five sixths of the work.
  CHECK(ranked.back().reason.find("unbalanced stages") != std::string::npos);
  CHECK(ranked[1].reason == "as fast as the first (within 1%)");

  oracle::SearchOptions tight;
  tight.memory_budget_bytes = static_cast<double>(ranked.front().peak_memory_bytes) - 1;
  const auto budgeted = oracle::rank_strategies(view, 2, 8, linear_profile(), tight);
  CHECK(budgeted.front().fits);
  CHECK(budgeted.front().peak_memory_bytes < ranked.front().peak_memory_bytes);
  CHECK(!budgeted.back().fits);
  CHECK(budgeted.back().reason.find("out of memory") != std::string::npos);
  CHECK(oracle::recommend<Tiny>(linear_profile(), 2, 8).plan.stages == ranked.front().plan.stages);
}

TEST_CASE("ranking on several threads: the same strategies, predictions and order as on one") {
  const auto view = oracle::view_of<Tiny>("tiny");
  auto profile = linear_profile();
  profile.cores = 1;  // 4 ranks share one core: the played programs take turns on it
  oracle::SearchOptions one, four;
  four.threads = 4;
  four.passes_per_thread = 1;  // a small query: threads all the same
  const auto serial = oracle::rank_strategies(view, 4, 32, profile, one);
  const auto threaded = oracle::rank_strategies(view, 4, 32, profile, four);
  REQUIRE(serial.size() == threaded.size());
  for (std::size_t i = 0; i < serial.size(); ++i) {
    CAPTURE(i);
    CHECK(threaded[i].plan.describe() == serial[i].plan.describe());
    CHECK(threaded[i].time_s == serial[i].time_s);
    CHECK(threaded[i].bubble_s == serial[i].bubble_s);
    CHECK(threaded[i].peak_memory_bytes == serial[i].peak_memory_bytes);
    CHECK(threaded[i].reason == serial[i].reason);
  }
}

TEST_CASE("a missing calibration is an error naming the layer and what to run") {
  oracle::MachineProfile empty;
  empty.path = "empty.json";
  CHECK_THROWS_WITH_AS(oracle::predict(oracle::view_of<Tiny>("tiny"), plan(1, 1, 8, 1, Schedule::gpipe), empty),
                       doctest::Contains("has no calibration of 'Conv2D(1 -> 2, 3x3, pad 1) @ 1x4x4'"), oracle::ProfileError);
  oracle::SearchOptions threads;
  threads.threads = 3;  // thrown on a helper thread, it reaches the caller
  threads.passes_per_thread = 1;
  CHECK_THROWS_WITH_AS(oracle::rank_strategies(oracle::view_of<Tiny>("tiny"), 4, 32, empty, threads),
                       doctest::Contains("has no calibration of 'Conv2D(1 -> 2, 3x3, pad 1) @ 1x4x4'"), oracle::ProfileError);
}

TEST_CASE("machine profile: compute written into a profile and read back; bad files are named") {
  const auto dir = std::filesystem::temp_directory_path() / ("hpf-oracle-test-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string path = (dir / "profile.json").string();
  std::ofstream(path) << R"({"format": "hpf-machine-profile", "version": 1, "label": "t", "hosts": 1,
    "host": {"cores": 2}, "comm": {"p2p_latency": {"2": [{"min_bytes": 4, "max_bytes": 64, "alpha_s": 1e-6,
    "beta_s_per_byte": 1e-9}]}}})";
  auto profile = oracle::load_profile(path);
  CHECK(profile.cores == 2);
  CHECK(!profile.hosts_share_cores);
  CHECK(profile.fit("p2p_latency").seconds(32, 2) == doctest::Approx(1e-6 + 32e-9));
  CHECK(profile.units.empty());
  auto written = linear_profile();
  written.units.begin()->second.split_buffer_elements = {40, 80};
  written.units.begin()->second.split_buffer_resident_elements = {10, 20};
  written.units.begin()->second.in_flight_forward_ratio = {1.25, 1.5};
  written.units.begin()->second.in_flight_backward_ratio = {1.125, 1.0};
  written.units.begin()->second.tape_bytes = {100, 6400};
  written.units.begin()->second.in_flight_bytes = {800, 12800};
  profile.units = written.units;
  profile.optimizer_s_per_parameter = 3e-9;
  profile.exchange_sum_s_per_element = 4e-10;
  profile.runtime_bytes = 11264;
  profile.empty_view_bytes = 128;
  oracle::save_compute(profile, path);
  const auto read = oracle::load_profile(path);
  CHECK(read.units.size() == written.units.size());
  CHECK(read.optimizer_s_per_parameter == doctest::Approx(3e-9));
  CHECK(read.exchange_sum_s_per_element == doctest::Approx(4e-10));
  CHECK(read.runtime_bytes == 11264);
  CHECK(read.empty_view_bytes == 128);
  CHECK(read.fit("p2p_latency").seconds(32, 2) == doctest::Approx(1e-6 + 32e-9));  // the rest is kept
  const auto& unit = read.units.begin()->second;
  CHECK(unit.forward(32) == doctest::Approx(32e-3));
  CHECK(unit.split_buffers(64) == 80);
  CHECK(unit.split_buffers_resident(64) == 20);
  CHECK(std::next(read.units.begin())->second.split_buffers_resident(64) == 0);  // none measured
  CHECK(unit.in_flight_excess(unit.in_flight_forward_ratio, 64) == doctest::Approx(0.5));
  CHECK(unit.in_flight_excess(unit.in_flight_backward_ratio, 1) == doctest::Approx(0.125));
  CHECK(unit.one_tape_bytes(64) == doctest::Approx(6400));
  CHECK(unit.tapes_in_flight_bytes(64) == doctest::Approx(12800));
  CHECK(std::next(read.units.begin())->second.in_flight_forward_ratio.empty());  // none measured: no factor
  CHECK(std::next(read.units.begin())->second.in_flight_excess({}, 64) == 0);

  // What a profile measured once but the oracle no longer prices (a link's burst, a noise probe) is ignored.
  std::ofstream(path) << R"({"format": "hpf-machine-profile", "link": {"burst_bytes": 112000, "rested_alpha_s": 6e-5,
    "compute_s_per_byte": 5e-10}, "compute": {"noise": {"windows_s": [1e-3]}}})";
  CHECK(oracle::load_profile(path).link.compute_s_per_byte == doctest::Approx(5e-10));
  std::ofstream(path) << R"({"format": "hpf-machine-profile", "link": {"compute_s_per_byte": -1}})";
  CHECK_THROWS_WITH_AS(oracle::load_profile(path), doctest::Contains("link.compute_s_per_byte must be a finite number >= 0"),
                       oracle::ProfileError);
  std::ofstream(path) << R"({"format": "hpf-machine-profile", "hosts": 4, "hosts_share_cores": true})";
  CHECK(oracle::load_profile(path).hosts_share_cores);
  CHECK(oracle::load_profile(path).compute_hosts() == 1);
  std::ofstream(path) << R"({"format": "hpf-machine-profile", "hosts_share_cores": 1})";
  CHECK_THROWS_WITH_AS(oracle::load_profile(path), doctest::Contains("hosts_share_cores must be true or false"),
                       oracle::ProfileError);
  for (const char* count : {R"("runtime_bytes": -1)", R"("empty_view_bytes": 0.5)", R"("threads": 1e300)"}) {
    std::ofstream(path) << R"({"format": "hpf-machine-profile", "compute": {)" << count << "}}";
    const std::string field = std::string(count).substr(1, std::string(count).find('"', 1) - 1);
    const std::string message = "compute." + field + " must be a whole number >= 0";
    CHECK_THROWS_WITH_AS(oracle::load_profile(path), doctest::Contains(message.c_str()), oracle::ProfileError);
  }
  std::ofstream(path) << R"({"format": "something else"})";
  CHECK_THROWS_WITH_AS(oracle::load_profile(path), doctest::Contains("is not an hpf machine profile"), oracle::ProfileError);
  std::ofstream(path) << R"({"format": "hpf-machine-profile", "compute": {"units": {"x": {"batch": [1, 2], "forward_s": [1]}}}})";
  CHECK_THROWS_WITH_AS(oracle::load_profile(path), doctest::Contains("compute.units[x].backward_s is missing"), oracle::ProfileError);
  std::ofstream(path) << R"({"format": "hpf-machine-profile", "compute": {"units": {"x": {"batch": [1, 2], "forward_s": [1, 2],
    "backward_s": [1, 2], "workspace_elements": [0, 0], "scratch_elements": [0, 0], "in_flight_forward_ratio": [1],
    "in_flight_backward_ratio": [1], "tape_bytes": [1], "in_flight_bytes": [8]}}}})";
  CHECK_THROWS_WITH_AS(oracle::load_profile(path), doctest::Contains("compute.units[x] needs arrays of one length"),
                       oracle::ProfileError);
  CHECK_THROWS_WITH_AS(oracle::load_profile((dir / "absent.json").string()), doctest::Contains("cannot read"),
                       oracle::ProfileError);
  std::filesystem::remove_all(dir);
}

namespace {
std::size_t program_allocations = 0, program_last_size = 0;
void program_callback(Kokkos::Tools::SpaceHandle, const char*, const void*, std::uint64_t size) {
  ++program_allocations;
  program_last_size = static_cast<std::size_t>(size);
}
}  // namespace

TEST_CASE("calibration measures what Kokkos counts for an empty view, and leaves a program's own callbacks alone") {
  auto empty_view_counted = [] {
    program_allocations = 0;
    { const Buffer<float, Kokkos::DefaultExecutionSpace> empty("empty", 0); }
    CHECK(program_allocations == 1);
    return program_last_size;
  };
  SUBCASE("no callbacks set: calibration counts through its own") {
    oracle::MachineProfile profile;
    oracle::calibrate<Tiny>(profile, {.batches = {2}, .repeats = 1});
    Kokkos::Tools::Experimental::set_allocate_data_callback(program_callback);
    CHECK(profile.empty_view_bytes > 0);  // Kokkos counts an empty view's allocation header
    CHECK(profile.empty_view_bytes == empty_view_counted());
  }
  SUBCASE("the program's callbacks set: calibration does not replace them, and measures nothing") {
    Kokkos::Tools::Experimental::set_allocate_data_callback(program_callback);
    oracle::MachineProfile profile;
    oracle::calibrate<Tiny>(profile, {.batches = {2}, .repeats = 1});
    CHECK(profile.empty_view_bytes == 0);
    CHECK(profile.runtime_bytes == 0);
    CHECK(empty_view_counted() > 0);  // still the program's callback
  }
  Kokkos::Tools::Experimental::set_allocate_data_callback(nullptr);
}

TEST_CASE("calibration runs the layers on the samples given (its shard's own, cycled), else on values in [-1, 1)") {
  using Net = Network<Tiny, float, Kokkos::DefaultExecutionSpace>;
  Net net;
  auto tape = net.make_tape(5);
  auto input = [&] {
    auto host = Kokkos::create_mirror_view(tape.input);
    Kokkos::deep_copy(host, tape.input);
    return std::vector<float>(host.data(), host.data() + 5 * 16);
  };
  SUBCASE("samples: the shard's own, in order, from the first again when the batch is larger") {
    // 6 samples in 2 shards; shard 1 holds samples 1, 3 and 5, whose values are 100 * index + position.
    const data::Shard shard{.index = 1, .count = 2};
    std::vector<float> values;
    for (std::size_t i : {1, 3, 5}) {
      for (std::size_t v = 0; v < 16; ++v) values.push_back(static_cast<float>(100 * i + v));
    }
    const auto samples = data::Dataset::from_values(6, {1, 4, 4}, 3, shard, values, {0, 1, 2});
    oracle::detail::load_calibration_input(net, tape, &samples, 5);
    const std::vector<float> loaded = input();
    const std::size_t held[] = {1, 3, 5};
    for (std::size_t k = 0; k < 5; ++k) {
      const std::size_t sample = held[k % 3];
      CHECK(loaded[k * 16] == static_cast<float>(100 * sample));
      CHECK(loaded[k * 16 + 15] == static_cast<float>(100 * sample + 15));
    }
    oracle::MachineProfile profile;
    oracle::calibrate<Tiny>(profile, {.batches = {2, 4}, .repeats = 1, .samples = &samples});
    CHECK(profile.units.size() == oracle::layer_keys<Tiny>().size());
  }
  SUBCASE("no samples: values uniform in [-1, 1), not all alike (pooling and ReLU branch on them)") {
    oracle::detail::load_calibration_input(net, tape, nullptr, 5);
    const std::vector<float> loaded = input();
    CHECK(std::all_of(loaded.begin(), loaded.end(), [](float v) { return v >= -1 && v < 1; }));
    CHECK(std::count_if(loaded.begin(), loaded.end(), [](float v) { return v < 0; }) > 20);
    CHECK(std::count_if(loaded.begin(), loaded.end(), [](float v) { return v > 0; }) > 20);
  }
  SUBCASE("samples of another shape, or none held, are named") {
    oracle::MachineProfile profile;
    const auto colour = data::Dataset::from_values(2, {3, 4, 4}, 3, {}, std::vector<float>(2 * 48, 0.5f), {0, 1});
    CHECK_THROWS_WITH_AS(oracle::calibrate<Tiny>(profile, {.batches = {2}, .samples = &colour}),
                         "hpf::oracle::calibrate: the samples are 3x4x4 but the model's input is 1x4x4",
                         std::invalid_argument);
    const auto labels_only = data::Dataset::from_values(2, {1, 4, 4}, 3, {.images = false}, {}, {0, 1});
    CHECK_THROWS_WITH_AS(oracle::calibrate<Tiny>(profile, {.batches = {2}, .samples = &labels_only}),
                         "hpf::oracle::calibrate: the samples hold no images", std::invalid_argument);
  }
}

TEST_CASE("calibration with a filter or channel split times one member's part and its buffers under keys of its own") {
  for (const auto split : {LayerSplit::filter(2), LayerSplit::channel(2)}) {
    INFO(split.describe());
    oracle::MachineProfile profile;
    oracle::calibrate<Tiny>(profile, {.batches = {1, 2}, .repeats = 1, .split = split});
    const std::vector<std::string> keys = oracle::layer_keys<Tiny>(MatmulPrecision::full, split);
    CHECK(profile.units.size() == std::set<std::string>(keys.begin(), keys.end()).size());
    for (const std::string& key : keys) {
      INFO(key);
      CHECK(key.ends_with(std::string(" [") + split.kind_name() + ":2 member]"));
      REQUIRE(profile.unit(key) != nullptr);
      CHECK(profile.unit(key)->batch == std::vector<double>{1, 2});
      CHECK(profile.unit(key)->forward_s[1] + profile.unit(key)->backward_s[1] > 0);
      CHECK(profile.unit(key)->split_buffer_elements.size() == 2);
      REQUIRE(profile.unit(key)->split_buffer_resident_elements.size() == 2);
      REQUIRE(profile.unit(key)->workspace_resident_elements.size() == 2);
      for (std::size_t i = 0; i < 2; ++i) {
        CHECK(profile.unit(key)->split_buffer_resident_elements[i] <= profile.unit(key)->split_buffer_elements[i]);
        CHECK(profile.unit(key)->workspace_resident_elements[i] <= profile.unit(key)->workspace_elements[i]);
      }
    }
    // The Dense layer keeps partial sums (channel) or input-gradient parts (filter) of its own.
    const auto dense = std::find_if(keys.begin(), keys.end(), [](const std::string& k) { return k.starts_with("Dense"); });
    REQUIRE(dense != keys.end());
    CHECK(profile.unit(*dense)->split_buffer_elements[1] > 0);
  }
  oracle::MachineProfile profile;
  CHECK_THROWS_WITH_AS(oracle::calibrate<Tiny>(profile, {.batches = {1}, .split = LayerSplit::spatial(2)}),
                       doctest::Contains("takes a filter or channel split of a whole model, not a spatial split over 2"),
                       std::invalid_argument);
}

TEST_CASE("calibration times every size within its time budget, and the first one even without budget") {
  oracle::MachineProfile profile;
  oracle::calibrate<Tiny>(profile, {.batches = {1, 2, 4}, .repeats = 3});
  // Each size also with 8 tapes in flight: one tape's bytes as the prediction counts them.
  const double per_sample = static_cast<double>(oracle::tape_bytes_per_sample(Tiny::input_shape::size, Tiny::cost, sizeof(float)));
  for (const auto& [key, timing] : profile.units) {
    CHECK(timing.batch == std::vector<double>{1, 2, 4});
    CHECK(timing.forward_s.size() == 3);  // a median per size
    CHECK(timing.backward_s.size() == 3);
    CHECK(timing.tape_bytes == std::vector<double>{per_sample, 2 * per_sample, 4 * per_sample});
    CHECK(timing.in_flight_bytes == std::vector<double>{8 * per_sample, 16 * per_sample, 32 * per_sample});
    REQUIRE(timing.in_flight_forward_ratio.size() == 3);
    REQUIRE(timing.in_flight_backward_ratio.size() == 3);
    for (std::size_t i = 0; i < 3; ++i) {  // Tiny's 8 tapes fit in a core's cache: untimed, factor 1
      CHECK(timing.in_flight_forward_ratio[i] == 1);
      CHECK(timing.in_flight_backward_ratio[i] == 1);
    }
  }
  // Tapes that all fit in a core's cache are taken at ratio 1, untimed; more are timed.
  const auto timed = static_cast<std::size_t>(std::ceil(2 * oracle::detail::core_cache_bytes() / (8 * per_sample)));
  oracle::MachineProfile larger;
  oracle::calibrate<Tiny>(larger, {.batches = {1, timed}, .repeats = 1});
  for (const auto& [key, timing] : larger.units) {
    REQUIRE(timing.in_flight_forward_ratio.size() == 2);
    CHECK(timing.in_flight_forward_ratio[0] == 1);
    CHECK(timing.in_flight_backward_ratio[0] == 1);
    CHECK(timing.in_flight_bytes[1] > 2 * oracle::detail::core_cache_bytes() - 8 * per_sample);
  }
  const auto& conv = larger.units.begin()->second;  // Conv2D's: a ratio of medians of timed spans
  CHECK(conv.in_flight_forward_ratio[1] != 1);
  CHECK(conv.in_flight_forward_ratio[1] > 0.2);
  CHECK(conv.in_flight_forward_ratio[1] < 5);
  oracle::MachineProfile times_only;  // as a canary calibrates
  oracle::calibrate<Tiny>(times_only, {.batches = {1}, .repeats = 1, .tapes_in_flight = false});
  for (const auto& [key, timing] : times_only.units) CHECK(timing.in_flight_bytes.empty());
  oracle::calibrate<Tiny>(profile, {.batches = {1, 2, 4}, .repeats = 3, .max_seconds = 0});
  for (const auto& [key, timing] : profile.units) CHECK(timing.batch == std::vector<double>{1});
}

TEST_CASE("calibration with set_host_load times each size alone and then busy in every round, and stores both") {
  std::vector<oracle::HostLoad> calls;
  oracle::CalibrationOptions o{.batches = {1, 2, 4}, .repeats = 2};
  o.set_host_load = [&](oracle::HostLoad load) { calls.push_back(load); };
  oracle::MachineProfile profile;
  oracle::calibrate<Tiny>(profile, o);
  using L = oracle::HostLoad;
  // The warm-up round alone; in 2 rounds, each of 3 sizes an untimed pass alone, then timed alone
  // and busy; the host left alone.
  std::vector<L> expected{L::alone};
  for (int size = 0; size < 2 * 3; ++size) {
    expected.push_back(L::alone);
    expected.push_back(L::alone);
    expected.push_back(L::busy);
  }
  expected.push_back(L::alone);
  CHECK(calls == expected);
  for (const auto& [key, timing] : profile.units) {
    CHECK(timing.batch == std::vector<double>{1, 2, 4});
    CHECK(timing.busy_forward_s.size() == 3);
    CHECK(timing.busy_backward_s.size() == 3);
    CHECK(std::all_of(timing.busy_forward_s.begin(), timing.busy_forward_s.end(), [](double s) { return s > 0; }));
  }
}

TEST_CASE("cluster profile: compute scaled by its speed, replicas across nodes reduce over the inter-node link") {
  const auto dir = std::filesystem::temp_directory_path() / ("hpf-oracle-cluster-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string path = (dir / "cluster.json").string();
  std::ofstream(path) << R"({"format": "hpf-cluster-profile", "name": "test", "ranks_per_node": 2, "compute_speed": 4,
    "intra_node": {"alpha_s": 1e-3, "beta_s_per_byte": 0}, "inter_node": {"alpha_s": 1e-2, "beta_s_per_byte": 0}})";
  const auto cluster = oracle::load_cluster(path, linear_profile());
  const auto view = oracle::view_of<Tiny>("tiny");
  // One rank: 6 units x 3 ms x 8 samples, 4 times as fast.
  CHECK(oracle::predict(view, plan(1, 1, 8, 1, Schedule::gpipe), cluster).compute_s == doctest::Approx(0.144 / 4));
  // 2 replicas on one node: one gather step over the intra-node link (the ordered reduction).
  CHECK(oracle::predict(view, plan(1, 2, 8, 1, Schedule::gpipe), cluster).reduction_s == doctest::Approx(1e-3));
  // 4 replicas on two nodes, summed per node first: a gather inside the node, one exchange between
  // the two leaders over the inter-node link, a broadcast inside.
  auto four = plan(1, 4, 8, 1, Schedule::gpipe);
  CHECK(oracle::predict(view, four, cluster).reduction_s == doctest::Approx(1e-3 + 1e-2 + 1e-3));
  // Without: scattered and collected among the four over the inter-node link, 2 x 3 steps.
  four.hierarchy = HostHierarchy::off;
  CHECK(oracle::predict(view, four, cluster).reduction_s == doctest::Approx(6e-2));
  std::ofstream(path) << R"({"format": "hpf-cluster-profile", "ranks_per_node": 2})";
  CHECK_THROWS_WITH_AS(oracle::load_cluster(path, linear_profile()), doctest::Contains("needs \"intra_node\" and \"inter_node\""),
                       oracle::ProfileError);
  std::filesystem::remove_all(dir);
}

TEST_CASE("re-materialization: each Repeat copy's forward again in backward, N block inputs and one block kept") {
  // Three copies of a block of two Dense<6> and a ReLU: per copy 1 ms forward, 2 ms backward per
  // sample (every unit is timed alike).
  using Blocks = Sequential<Input<6>, Repeat<3, Chain<Dense<6>, ReLU, Dense<6>>>, Dense<3>, SoftmaxCrossEntropy>;
  oracle::MachineProfile profile;
  profile.label = "test";
  profile.cores = 64;
  for (const std::string& key : oracle::layer_keys<Blocks>()) {
    profile.units[key] = hpf_test::linear_unit(1e-3, 2e-3);
  }
  const auto view = oracle::view_of<Blocks>("blocks");
  oracle::Plan kept{.stages = 1, .replicas = 1, .batch = 4, .micro_batches = 1, .schedule = Schedule::one_f_one_b,
                    .bounds = oracle::balanced_bounds<Blocks>(1)};
  oracle::Plan rebuilt = kept;
  rebuilt.recompute = true;
  const auto a = oracle::predict(view, kept, profile), b = oracle::predict(view, rebuilt, profile);
  // 3 copies x 1 ms x 4 samples more.
  CHECK(b.time_s - a.time_s == doctest::Approx(3 * 1e-3 * 4));
  // A copy keeps A values, its output 6 among them: 3 A - (3 x 6 + A) values per sample fewer, for
  // 4 samples of floats.
  constexpr std::size_t A = bind_t<Chain<Dense<6>, ReLU, Dense<6>>, Shape<6>>::cost.activations;
  static_assert(A > 9);
  CHECK(a.stage_memory[0].activations - b.stage_memory[0].activations == (3 * A - (3 * 6 + A)) * 4 * sizeof(float));
}

TEST_CASE("layer splits: the split products' share of a unit's FLOPs runs on 1/G, each layer's rings at the p2p line") {
  using Mlp2 = Sequential<Input<8>, Dense<16>, ReLU, Dense<4>, SoftmaxCrossEntropy>;
  oracle::MachineProfile profile;
  profile.label = "test";
  profile.cores = 64;
  for (const std::string& key : oracle::layer_keys<Mlp2>()) {
    profile.units[key] = hpf_test::linear_unit(1e-3, 2e-3);
  }
  const auto view = oracle::view_of<Mlp2>("mlp2");
  const auto planned = [&](LayerSplit split) {
    return oracle::Plan{.stages = 1, .replicas = 1, .batch = 8, .micro_batches = 2, .schedule = Schedule::one_f_one_b,
                        .bounds = oracle::balanced_bounds<Mlp2>(1), .split = split};
  };
  // Per sample: 1 ms forward and 2 ms backward per unit, of which a Dense layer's products are
  // 2 in out / (2 in out + out) forward and 4 in out / (4 in out + out) backward.
  double expected = 0;
  for (const auto& u : view.units) {
    const double f = u.cost.forward_flops ? 2.0 * u.cost.split_macs / u.cost.forward_flops : 0;
    const double b = u.cost.backward_flops ? 4.0 * u.cost.split_macs / u.cost.backward_flops : 0;
    expected += 8 * (1e-3 * (1 - f / 2) + 2e-3 * (1 - b / 2));
  }
  const auto whole = oracle::predict(view, planned({}), profile);
  CHECK(whole.time_s == doctest::Approx(8 * 4 * 3e-3));
  for (const auto split : {LayerSplit::filter(2), LayerSplit::channel(2)}) {
    INFO(split.describe());
    const auto p = oracle::predict(view, planned(split), profile);
    CHECK(p.plan.ranks() == 2);
    CHECK(p.time_s == doctest::Approx(expected));
    // 1 ms per message: each of the 2 Dense layers rings once in forward and twice in backward
    // among 2 ranks (one step each), per micro-batch.
    auto paid = profile;
    paid.comm["p2p_latency"].by_ranks[2] = {{0, 1e30, 1e-3, 0}};
    CHECK(oracle::predict(view, planned(split), paid).time_s == doctest::Approx(expected + 2 * 2 * 3e-3));
  }

  // With a member's calibration of filter:2 (0.5 ms forward, 1.5 ms backward per sample and unit):
  // all of it stays, no FLOP share; channel:2, not calibrated so, keeps the share of the whole's.
  auto members = profile;
  for (const std::string& key : oracle::layer_keys<Mlp2>(MatmulPrecision::full, LayerSplit::filter(2))) {
    CHECK(key.ends_with(" [filter:2 member]"));
    members.units[key] = hpf_test::linear_unit(0.5e-3, 1.5e-3);
    members.units[key].split_buffer_elements = {10, 640};
  }
  const auto filter = oracle::predict(view, planned(LayerSplit::filter(2)), members);
  CHECK(filter.time_s == doctest::Approx(8 * 4 * 2e-3));
  // Each unit's own buffers at the micro-batch of 4: 40 values, 4 units.
  CHECK(filter.stage_memory[0].split_buffers == 4 * 40 * sizeof(float));
  CHECK(filter.stage_memory[0].total() == oracle::predict(view, planned(LayerSplit::filter(2)), profile).stage_memory[0].total() +
                                              4 * 40 * sizeof(float));
  // None measured as written: all resident. A quarter written: three quarters out of the resident
  // set, still in the views' peak.
  CHECK(filter.stage_memory[0].unwritten == 0);
  CHECK(filter.stage_memory[0].resident() == filter.stage_memory[0].total());
  auto written = members;
  for (auto& [key, t] : written.units) t.split_buffer_resident_elements = {2.5, 160};
  const auto quarter = oracle::predict(view, planned(LayerSplit::filter(2)), written);
  CHECK(quarter.stage_memory[0].split_buffers == 4 * 40 * sizeof(float));
  CHECK(quarter.stage_memory[0].unwritten == 4 * 30 * sizeof(float));
  CHECK(quarter.peak_memory_bytes == filter.peak_memory_bytes);
  CHECK(quarter.peak_resident_bytes == filter.peak_resident_bytes - 4 * 30 * sizeof(float));
  // A workspace of 40 values at 4 samples of which the layers write at most 20: 20 unwritten.
  auto roomy = profile;
  for (auto& [key, t] : roomy.units) {
    t.workspace_elements = {10, 640};
    t.workspace_resident_elements = {5, 320};
  }
  const auto whole_roomy = oracle::predict(view, planned({}), roomy);
  CHECK(whole_roomy.stage_memory[0].workspace == 40 * sizeof(float));
  CHECK(whole_roomy.stage_memory[0].unwritten == 20 * sizeof(float));
  CHECK(whole_roomy.stage_memory[0].resident() == whole_roomy.stage_memory[0].total() - 20 * sizeof(float));
  const auto channel = oracle::predict(view, planned(LayerSplit::channel(2)), members);
  CHECK(channel.time_s == doctest::Approx(expected));
  CHECK(channel.stage_memory[0].split_buffers == 0);
  CHECK(oracle::predict(view, planned({}), members).time_s == doctest::Approx(8 * 4 * 3e-3));

  // Ranked with the others: data parallel 1 x 2 (M = 1, 2, 4), pipelines 2 x 1 (M = 1, 2, 4, 8, two
  // schedules), and filter and channel splits over 2 of one replica (M = 1, 2, 4, 8).
  oracle::SearchOptions with_splits;
  with_splits.layer_splits = true;
  const auto ranked = oracle::rank_strategies(view, 2, 8, profile, with_splits);
  CHECK(ranked.size() == 3 + 8 + 8);
  const auto splits = std::count_if(ranked.begin(), ranked.end(), [](const auto& p) { return p.plan.split.splits(); });
  CHECK(splits == 8);
  CHECK(oracle::rank_strategies(view, 2, 8, profile).size() == 3 + 8);
  const auto it = std::find_if(ranked.begin(), ranked.end(), [](const auto& p) { return p.plan.split.splits(); });
  REQUIRE(it != ranked.end());
  CHECK(it->plan.describe().find("split over 2") != std::string::npos);
}

TEST_CASE("layer splits: a DensePair sums over the group once each way, the weights gathered per layer") {
  using Pair = Sequential<Input<8>, DensePair<Dense<16>, ReLU, Dense<4>>, SoftmaxCrossEntropy>;
  oracle::MachineProfile profile;
  profile.label = "test";
  profile.cores = 64;
  for (const std::string& key : oracle::layer_keys<Pair>()) {
    profile.units[key] = hpf_test::linear_unit(1e-3, 2e-3);
  }
  const auto view = oracle::view_of<Pair>("pair");
  for (const auto split : {LayerSplit::filter(2), LayerSplit::channel(2)}) {
    INFO(split.describe());
    const oracle::Plan plan{.stages = 1, .replicas = 1, .batch = 8, .micro_batches = 2,
                            .schedule = Schedule::one_f_one_b, .bounds = oracle::balanced_bounds<Pair>(1), .split = split};
    const double free = oracle::predict(view, plan, profile).time_s;
    // 1 ms per message: per micro-batch one sum forward, and backward the two layers' weight
    // gathers and one sum (lone layers: 3 messages each, 6 in all).
    auto paid = profile;
    paid.comm["p2p_latency"].by_ranks[2] = {{0, 1e30, 1e-3, 0}};
    CHECK(oracle::predict(view, plan, paid).time_s == doctest::Approx(free + 2 * 4e-3));
  }
}

TEST_CASE("spatial splits: a slab rank's calibrated layers, its halo swaps and its group's allgathers at the p2p line") {
  using Cnn = Sequential<Input<1, 8, 8>, Conv2D<4, 3, Pad<1>>, BatchNorm, ReLU, GlobalAvgPool, Dense<3>, SoftmaxCrossEntropy>;
  using Slabs = SpatialSplit<Cnn, 2, 1>;
  // What one of 2 slab ranks exchanges per micro-batch: the convolution swaps one row of its one
  // channel each way (8 values per sample) and sums its 4 x 9 + 4 parameters' gradients;
  // BatchNorm sums 4 means and 4 variances forward, 2 x 4 gradient sums backward; GlobalAvgPool
  // sums 4 channels per sample.
  static_assert(at_t<Slabs::bound_layers, 0>::cost.group ==
                GroupTraffic{.halo_swaps = 1, .halo_elements = 8, .backward_gathers = 1, .backward_fixed = 40});
  static_assert(at_t<Slabs::bound_layers, 1>::cost.group ==
                GroupTraffic{.forward_gathers = 2, .forward_fixed = 8, .backward_gathers = 1, .backward_fixed = 8});
  static_assert(at_t<Slabs::bound_layers, 3>::cost.group == GroupTraffic{.forward_gathers = 1, .forward_per_sample = 4});
  // One process computing both slabs exchanges nothing, and neither does the whole model.
  static_assert(SpatialSplit<Cnn, 2>::cost.group == GroupTraffic{} && Cnn::cost.group == GroupTraffic{});

  oracle::MachineProfile profile;
  profile.label = "test";
  profile.cores = 64;
  for (const auto& keys : {oracle::layer_keys<Cnn>(), oracle::layer_keys<Slabs>()}) {
    for (const std::string& key : keys) profile.units[key] = hpf_test::linear_unit(1e-3, 2e-3);
  }
  const auto whole = oracle::view_of<Cnn>("cnn");
  const auto slabs = oracle::view_of<Slabs>("cnn");
  CHECK(whole.spatial_group == 1);
  CHECK(slabs.spatial_group == 2);
  const auto planned = [&](LayerSplit split, std::size_t replicas = 1) {
    return oracle::Plan{.stages = 1, .replicas = replicas, .batch = 8, .micro_batches = 2, .schedule = Schedule::one_f_one_b,
                        .bounds = oracle::balanced_bounds<Cnn>(1), .split = split};
  };
  // Without communication: the slab's 6 units, 1 ms forward and 2 ms backward per sample each.
  const auto free = oracle::predict(slabs, planned(LayerSplit::spatial(2)), profile);
  CHECK(free.plan.ranks() == 2);
  CHECK(free.time_s == doctest::Approx(8 * 6 * 3e-3));
  // 1 ms per message: per micro-batch, the halo swap forward and backward, one ring step for each
  // of the convolution's, BatchNorm's 3 and GlobalAvgPool's allgathers: 7 ms, twice.
  auto paid = profile;
  paid.comm["p2p_latency"].by_ranks[2] = {{0, 1e30, 1e-3, 0}};
  CHECK(oracle::predict(slabs, planned(LayerSplit::spatial(2)), paid).time_s == doctest::Approx(8 * 6 * 3e-3 + 2 * 7e-3));
  // 1 us per byte: per micro-batch of 4 samples, 2 x 4 x 8 halo values, 40 + 8 + 8 summed values
  // and 4 x 4 pooled sums, of 4 bytes.
  auto per_byte = profile;
  per_byte.comm["p2p_latency"].by_ranks[2] = {{0, 1e30, 0, 1e-6}};
  CHECK(oracle::predict(slabs, planned(LayerSplit::spatial(2)), per_byte).time_s ==
        doctest::Approx(8 * 6 * 3e-3 + 2 * 1e-6 * 4 * (2 * 4 * 8 + 40 + 8 + 8 + 4 * 4)));

  // A spatial plan predicts one slab rank's view, and that view no other plan.
  CHECK_THROWS_WITH_AS(oracle::predict(whole, planned(LayerSplit::spatial(2)), profile),
                       doctest::Contains("needs view_of<SpatialSplit<Model, 2, 1>>"), std::invalid_argument);
  CHECK_THROWS_WITH_AS(oracle::predict(slabs, planned({}, 2), profile),
                       doctest::Contains("one slab rank's view of samples split into 2 slabs"), std::invalid_argument);
  CHECK_THROWS_AS(oracle::predict(slabs, planned(LayerSplit::spatial(4)), profile), std::invalid_argument);

  // Ranked with the others (layer splits asked for): data parallel 1 x 2 (M = 1, 2, 4), pipelines
  // 2 x 1 (M = 1, 2, 4, 8, two schedules), filter and channel splits over 2 and the spatial split
  // over 2 of one replica (M = 1, 2, 4, 8 each).
  oracle::SearchOptions with_splits;
  with_splits.layer_splits = true;
  with_splits.spatial_views = {slabs};
  const auto ranked = oracle::rank_strategies(whole, 2, 8, paid, with_splits);
  CHECK(ranked.size() == 3 + 8 + 3 * 4);
  const auto spatial = std::count_if(ranked.begin(), ranked.end(), [](const auto& p) { return p.plan.split.kind == SplitKind::spatial; });
  CHECK(spatial == 4);
  // Without layer splits, the slab views are not tried.
  with_splits.layer_splits = false;
  CHECK(oracle::rank_strategies(whole, 2, 8, paid, with_splits).size() == 3 + 8);
}
