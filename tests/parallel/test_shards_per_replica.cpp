#include <hpf/parallel/thread_groups.hpp>
#include <hpf/zoo/models.hpp>

#include <support/equivalence.hpp>
#include <support/trace_file.hpp>

#include <doctest/doctest.h>

#include <algorithm>
#include <cstdio>
#include <string>

// Each replica of hpf::fit trains several data shards per step (TrainOptions::shards_per_replica),
// one after another or side by side on its threads: R replicas x C shards train bit for bit as one
// process with R x C data shards (the ordered reduction), BatchNorm buffers included. Side by side
// runs on threads where Kokkos OpenMP has them (the OpenMP test pass), else one after another.
namespace {
using ResNet = hpf::zoo::ResNet20;

hpf::TrainOptions resnet_options() {
  hpf::TrainOptions o;
  o.batch = 16;
  o.micro_batches = 1;
  o.optimizer = hpf::SgdOptions{.learning_rate = 0.1, .momentum = 0.9, .weight_decay = 5e-4};
  o.network = {.seed = 22, .init = hpf::InitScheme::kaiming_normal_fan_out};
  o.data_seed = 23;
  o.bucket_bytes = 256 << 10;
  o.reduction = hpf::GradientReduction::ordered;
  o.shards_per_replica = 2;
  return o;
}
// Four full batches and a partial one.
const auto resnet_source = hpf_test::synthetic_source<ResNet>(16 * 4 + 5);
constexpr std::size_t resnet_steps = 5;

using Cnn = hpf::zoo::Cnn;
hpf::TrainOptions cnn_options() {
  hpf::TrainOptions o = hpf_test::cnn_options();
  o.shards_per_replica = 3;
  return o;
}
const auto cnn_source = hpf_test::synthetic_source<Cnn>(24 * 6 + 5);
constexpr std::size_t cnn_steps = 7;
}  // namespace

TEST_CASE("ResNet-20: 2 shards per replica, one after another and side by side, bit for bit as one process") {
  auto o = resnet_options();
  hpf_test::check_strategy<ResNet, hpf::DataParallel, float>(o, resnet_source, {resnet_steps, 0});
  o.shards_side_by_side = true;
  hpf_test::check_strategy<ResNet, hpf::DataParallel, float>(o, resnet_source, {resnet_steps, 0});
}

TEST_CASE("Side by side where Kokkos OpenMP has a thread per shard, one after another elsewhere and in pipelines") {
  const hpf::comm::Communicator world;
  auto o = resnet_options();
  o.shards_side_by_side = true;
  o.steps_per_epoch = 1;
  o.progress = hpf::ProgressMode::none;
  o.evaluate = false;
  const std::size_t threads = hpf::thread_groups_available<Kokkos::DefaultExecutionSpace>();
  const auto report = hpf::fit<ResNet, hpf::DataParallel, float>(world, o, resnet_source);
  INFO(threads, " thread groups available");
  CHECK(report.shard_threads == (threads >= 2 ? 2 : 0));
  if (world.size() % 2 == 0) {
    auto c = cnn_options();
    c.shards_side_by_side = true;
    c.steps_per_epoch = 1;
    c.progress = hpf::ProgressMode::none;
    c.evaluate = false;
    CHECK(hpf::fit<Cnn, hpf::Pipeline<hpf::Cuts<3>>, float>(world, c, cnn_source).shard_threads == 0);
  }
}

TEST_CASE("The timeline of shards side by side: every bucket's reduction once per step, the same training") {
  const hpf::comm::Communicator world;
  auto o = resnet_options();
  o.shards_side_by_side = true;
  o.progress = hpf::ProgressMode::none;
  o.evaluate = false;
  const std::string path = "hpf_test_shards_timeline.json";
  if (world.rank() == 0) std::remove(path.c_str());
  auto traced = o;
  traced.trace.path = path;
  traced.trace.first_step = 1;
  traced.trace.last_step = 2;
  const auto with_trace = hpf::fit<ResNet, hpf::DataParallel, float>(world, traced, resnet_source);
  const auto without = hpf::fit<ResNet, hpf::DataParallel, float>(world, o, resnet_source);
  CHECK(with_trace.step_losses == without.step_losses);
  world.barrier();
  const auto trace = hpf_test::read_trace(path);
  REQUIRE(trace.processes.size() == static_cast<std::size_t>(world.size()));
  for (const auto& [pid, p] : trace.processes) {
    CHECK(p.buckets > 1);  // ResNet-20's 1.1 MB gradient in 256 KiB buckets
    for (long long step = 1; step <= 2; ++step) {
      INFO("rank ", pid, ", step ", step);
      const auto buckets = trace.select(pid, "collective", "allreduce", step);
      CHECK(static_cast<long long>(buckets.size()) == p.buckets);
      for (long long b = 0; b < p.buckets; ++b) {
        CHECK(std::count_if(buckets.begin(), buckets.end(), [&](const auto& s) { return s.bucket == b; }) == 1);
      }
    }
  }
  world.barrier();
  if (world.rank() == 0) std::remove(path.c_str());
}

TEST_CASE("CNN: 3 shards per replica through a 2-stage pipeline, both schedules, bit for bit as one process") {
  if (hpf_test::world_size() % 2 != 0) {
    CHECK(hpf_test::world_size() == 1);  // the registered odd world size: no pipeline of 2 fits
    return;
  }
  auto o = cnn_options();
  o.shards_side_by_side = true;  // pipelines train their shards one after another all the same
  hpf_test::check_strategy_all<Cnn, hpf::Pipeline<hpf::Cuts<3>>>(o, cnn_source, cnn_steps);
}

TEST_CASE("CNN: 3 shards per replica through MPI_Iallreduce, within rounding of one process") {
  auto o = cnn_options();
  o.reduction = hpf::GradientReduction::allreduce;
  hpf_test::check_strategy<Cnn, hpf::DataParallel, double>(o, cnn_source, {cnn_steps, 1e-9});
}

TEST_CASE("Shards per replica that do not fit: a usage error on every rank") {
  const hpf::comm::Communicator world;
  auto o = cnn_options();
  o.progress = hpf::ProgressMode::none;
  o.shards_per_replica = 0;
  CHECK_THROWS_WITH_AS((hpf::fit<Cnn, hpf::DataParallel, float>(world, o, cnn_source)),
                       doctest::Contains("shards_per_replica must be at least 1"), hpf::comm::UsageError);
  o.shards_per_replica = 5;  // 24 does not split over 5 x replicas shards
  CHECK_THROWS_WITH_AS((hpf::fit<Cnn, hpf::DataParallel, float>(world, o, cnn_source)),
                       doctest::Contains("does not split evenly"), hpf::comm::UsageError);
}
