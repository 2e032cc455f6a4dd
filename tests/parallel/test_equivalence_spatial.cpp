#include <hpf/layers/conv3d.hpp>
#include <hpf/layers/max_pool3d.hpp>
#include <hpf/zoo/blocks.hpp>
#include <hpf/zoo/models.hpp>

#include <support/equivalence.hpp>
#include <support/trace_file.hpp>

#include <doctest/doctest.h>

#include <cstdio>
#include <sstream>
#include <string>

// Samples split into slabs of rows over groups of ranks (spatial parallelism), alone and with data
// and pipeline parallelism: every layout of the world size (1, 2, 4 or 6 ranks) must reproduce one
// process that computes every member's slab, bit for bit.
namespace {
// 12 rows: slabs of 6, 4 or 2 rows pool by 2; after pooling, slabs of 3, 2 or 1 rows.
using Cnn = hpf::Sequential<hpf::Input<1, 12, 8>, hpf::Conv2D<4, 3, hpf::Pad<1>>, hpf::BatchNorm, hpf::ReLU,
                            hpf::MaxPool<2>, hpf::Conv2D<6, 3, hpf::Pad<1>>, hpf::ReLU, hpf::Flatten, hpf::Dense<16>,
                            hpf::ReLU, hpf::Dense<10>, hpf::SoftmaxCrossEntropy>;
using ResNet = hpf::Sequential<hpf::Input<3, 8, 8>, hpf::Conv2D<4, 3, hpf::Pad<1>, hpf::NoBias>, hpf::BatchNorm, hpf::ReLU,
                               hpf::zoo::BasicBlock<4>, hpf::zoo::BasicBlock<6, 2, false, hpf::zoo::Shortcut::projection>,
                               hpf::GlobalAvgPool, hpf::Dense<10>, hpf::SoftmaxCrossEntropy>;

// 12 planes: slabs of 6, 4 or 2 planes pool by 2.
using Volumes = hpf::Sequential<hpf::Input<2, 12, 4, 4>, hpf::Conv3D<4, 3, hpf::Pad<1>>, hpf::BatchNorm, hpf::ReLU,
                                hpf::MaxPool3D<2>, hpf::Conv3D<6, 3, hpf::Pad<1>>, hpf::ReLU, hpf::GlobalAvgPool, hpf::Dense<10>,
                                hpf::SoftmaxCrossEntropy>;

hpf::TrainOptions options() {
  hpf::TrainOptions o = hpf_test::cnn_options();  // batch 24 in 2 micro-batches, SGD with momentum
  o.bucket_bytes = 4 << 10;                        // several buckets
  return o;
}
const auto cnn_source = hpf_test::synthetic_source<Cnn>(24 * 4 + 5);
const auto resnet_source = hpf_test::synthetic_source<ResNet>(24 * 3 + 5);
const auto volume_source = hpf_test::synthetic_source<Volumes>(24 * 3 + 5);

template <std::size_t G>
using Slabs = hpf::Pipeline<hpf::Cuts<>, hpf::Spatial<G>>;
// Two stages: the slab layers, and the head after the gather.
template <std::size_t G>
using SlabsThenHead = hpf::Pipeline<hpf::Cuts<7>, hpf::Spatial<G>>;
// Two stages that pass a slab on: the first convolution, and the rest.
template <std::size_t G>
using SlabsAcrossStages = hpf::Pipeline<hpf::Cuts<2>, hpf::Spatial<G>>;
}  // namespace

static_assert(Slabs<3>::split == hpf::LayerSplit::spatial(3));
static_assert(std::is_same_v<hpf::split_model_t<Cnn, Slabs<2>>, hpf::SpatialSplit<Cnn, 2, 1>>);
static_assert(std::is_same_v<hpf::split_model_t<Cnn, hpf::DataParallel>, Cnn>);

TEST_CASE("Spatial split: every layout of the world size trains a CNN bit for bit as one process") {
  const auto o = options();
  switch (hpf_test::world_size()) {
    case 1:
      hpf_test::check_strategy_all<Cnn, Slabs<1>>(o, cnn_source, 5);
      break;
    case 2:
      hpf_test::check_strategy_all<Cnn, Slabs<2>>(o, cnn_source, 5);
      break;
    case 4:
      hpf_test::check_strategy_all<Cnn, Slabs<2>>(o, cnn_source, 5);
      hpf_test::check_strategy_all<Cnn, SlabsThenHead<2>>(o, cnn_source, 5);
      hpf_test::check_strategy_all<Cnn, SlabsAcrossStages<2>>(o, cnn_source, 5);
      break;
    case 6:
      hpf_test::check_strategy_all<Cnn, Slabs<2>>(o, cnn_source, 5);
      hpf_test::check_strategy_all<Cnn, Slabs<3>>(o, cnn_source, 5);
      hpf_test::check_strategy_all<Cnn, Slabs<6>>(o, cnn_source, 5);
      hpf_test::check_strategy_all<Cnn, SlabsAcrossStages<3>>(o, cnn_source, 5);
      break;
    default:
      FAIL("no layouts listed for ", hpf_test::world_size(), " ranks");
  }
}

TEST_CASE("Spatial split: convolutions computing their interior rows while halos travel, bit for bit as one process") {
  auto o = options();
  o.network.interior_first = true;  // the reference too: its bits differ from the whole slab's
  switch (hpf_test::world_size()) {
    case 1:
      hpf_test::check_strategy_all<Cnn, Slabs<1>>(o, cnn_source, 5);
      break;
    case 6:
      hpf_test::check_strategy_all<Cnn, Slabs<3>>(o, cnn_source, 5);  // 4 rows: 2 interior
      hpf_test::check_strategy_all<Volumes, Slabs<3>>(o, volume_source, 4);
      break;
    default:  // 2 and 4 ranks
      hpf_test::check_strategy_all<Cnn, Slabs<2>>(o, cnn_source, 5);
      hpf_test::check_strategy_all<Volumes, Slabs<2>>(o, volume_source, 4);
  }
}

TEST_CASE("Spatial split: a ResNet, strided and projection convolutions included, bit for bit as one process") {
  const auto o = options();
  if (hpf_test::world_size() % 2 != 0) {
    hpf_test::check_strategy_all<ResNet, Slabs<1>>(o, resnet_source, 4);
    return;
  }
  hpf_test::check_strategy_all<ResNet, Slabs<2>>(o, resnet_source, 4);
  if (hpf_test::world_size() == 4) hpf_test::check_strategy_all<ResNet, Slabs<4>>(o, resnet_source, 4);
}

TEST_CASE("Spatial split: a 3-D CNN's volumes split into slabs of planes, bit for bit as one process") {
  const auto o = options();
  switch (hpf_test::world_size()) {
    case 1:
      hpf_test::check_strategy_all<Volumes, Slabs<1>>(o, volume_source, 4);
      break;
    case 6:
      hpf_test::check_strategy_all<Volumes, Slabs<3>>(o, volume_source, 4);
      hpf_test::check_strategy_all<Volumes, Slabs<6>>(o, volume_source, 4);
      break;
    default:  // 2 and 4 ranks
      hpf_test::check_strategy_all<Volumes, Slabs<2>>(o, volume_source, 4);
  }
}

TEST_CASE("Spatial split: mixed precision and two shards per replica train bit for bit as one process") {
  auto o = options();
  o.shards_per_replica = 2;
  o.reduction = hpf::GradientReduction::ordered;
  if (hpf_test::world_size() % 2 != 0) {
    hpf_test::check_strategy<Cnn, Slabs<1>, hpf::Mixed<hpf::bf16>>(o, cnn_source, {5, 0});
    return;
  }
  hpf_test::check_strategy<Cnn, Slabs<2>, hpf::Mixed<hpf::bf16>>(o, cnn_source, {5, 0});
}

TEST_CASE("Spatial split: the log names the split; the timeline shows halo exchanges and group sums on the group row") {
  hpf::comm::Communicator world;
  // The odd world size runs a group of one, which splits nothing: no group spans, no log line.
  const bool split = world.size() % 2 == 0;
  const std::string path = "hpf_test_spatial_timeline.json";
  if (world.rank() == 0) std::remove(path.c_str());
  std::ostringstream log;
  auto traced = options();
  traced.progress = hpf::ProgressMode::none;
  traced.log = &log;
  traced.trace.path = path;
  traced.trace.first_step = 1;
  traced.trace.last_step = 1;
  if (split) {
    hpf::fit<Cnn, Slabs<2>>(world, traced, cnn_source);
  } else {
    hpf::fit<Cnn, Slabs<1>>(world, traced, cnn_source);
  }
  world.barrier();
  const auto trace = hpf_test::read_trace(path);
  REQUIRE(trace.processes.size() == static_cast<std::size_t>(world.size()));
  for (const auto& [pid, p] : trace.processes) {
    INFO("rank ", pid);
    // 2 micro-batches; each convolution swaps halos forward and backward (the first passes no
    // input gradient back); its weight gradients and BatchNorm's 3 statistics are summed; Flatten gathers.
    CHECK(trace.select(pid, "group", "halo exchange", 1).size() == (split ? 2 * (2 + 1) : 0));
    CHECK(trace.select(pid, "group", "sum in group", 1).size() == (split ? 2 * (2 + 3) : 0));
    CHECK(trace.select(pid, "group", "gather in group", 1).size() == (split ? 2 * 1 : 0));
  }
  world.barrier();  // every rank has read the trace
  if (world.rank() == 0) {
    const std::string line = "hpf: layer split, samples in slabs of rows, layers up to the gather in spatial split over 2 ranks: " +
                             std::to_string(world.size() / 2) + " replica(s) x 1 stage(s) x 2 ranks";
    if (split) {
      CHECK_MESSAGE(log.str().find(line) != std::string::npos, log.str());
    } else {
      CHECK_MESSAGE(log.str().find("layer split") == std::string::npos, log.str());
    }
    std::remove(path.c_str());
  }
}
