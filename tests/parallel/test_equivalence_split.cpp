#include <hpf/layers/dropout.hpp>
#include <hpf/layers/gelu.hpp>
#include <hpf/model/dense_pair.hpp>
#include <hpf/zoo/cosmoflow.hpp>
#include <hpf/zoo/models.hpp>

#include <support/equivalence.hpp>
#include <support/trace_file.hpp>

#include <doctest/doctest.h>

#include <cstdio>
#include <sstream>
#include <string>

// Dense and convolution layers split over groups of ranks (filter and channel parallelism), alone
// and with data and pipeline parallelism: every layout of the world size (1, 2, 4 or 6 ranks) must
// reproduce one process that computes every member's part, bit for bit.
namespace {
using Model = hpf::Sequential<hpf::Input<1, 8, 8>, hpf::Flatten, hpf::Dense<48>, hpf::ReLU, hpf::Dense<30>, hpf::GELU,
                              hpf::Dense<10>, hpf::SoftmaxCrossEntropy>;

hpf::TrainOptions options() {
  hpf::TrainOptions o = hpf_test::cnn_options();  // batch 24 in 2 micro-batches, SGD with momentum
  o.bucket_bytes = 4 << 10;                        // several buckets
  return o;
}
const auto source = hpf_test::synthetic_source<Model>(24 * 6 + 5);
constexpr std::size_t steps = 7;

template <std::size_t G>
using Filtered = hpf::Pipeline<hpf::Cuts<>, hpf::Filter<G>>;
template <std::size_t G>
using Channeled = hpf::Pipeline<hpf::Cuts<>, hpf::Channel<G>>;
template <std::size_t G>
using PipelinedFilter = hpf::Pipeline<hpf::Cuts<3>, hpf::Filter<G>>;
template <std::size_t G>
using PipelinedChannel = hpf::Pipeline<hpf::Cuts<3>, hpf::Channel<G>>;
}  // namespace

static_assert(hpf::Pipeline<hpf::Cuts<>, hpf::Filter<3>>::split == hpf::LayerSplit::filter(3));
static_assert(hpf::DataParallel::split == hpf::LayerSplit{});
static_assert(hpf::Pipeline<hpf::Cuts<2>, Kokkos::DefaultHostExecutionSpace, hpf::Channel<2>,
                            Kokkos::DefaultHostExecutionSpace>::stage_spaces::size == 2);

TEST_CASE("Layer splits: every layout of the world size trains bit for bit as one process") {
  const auto o = options();
  switch (hpf_test::world_size()) {
    case 1:
      hpf_test::check_strategy_all<Model, Filtered<1>>(o, source, steps);
      break;
    case 2:
      hpf_test::check_strategy_all<Model, Filtered<2>>(o, source, steps);
      hpf_test::check_strategy_all<Model, Channeled<2>>(o, source, steps);
      break;
    case 4:
      hpf_test::check_strategy_all<Model, Filtered<2>>(o, source, steps);
      hpf_test::check_strategy_all<Model, Channeled<2>>(o, source, steps);
      hpf_test::check_strategy_all<Model, Filtered<4>>(o, source, steps);
      hpf_test::check_strategy_all<Model, PipelinedFilter<2>>(o, source, steps);
      hpf_test::check_strategy_all<Model, PipelinedChannel<2>>(o, source, steps);
      break;
    case 6:
      hpf_test::check_strategy_all<Model, Filtered<2>>(o, source, steps);
      hpf_test::check_strategy_all<Model, Channeled<3>>(o, source, steps);
      hpf_test::check_strategy_all<Model, Filtered<6>>(o, source, steps);
      hpf_test::check_strategy_all<Model, PipelinedFilter<3>>(o, source, steps);
      hpf_test::check_strategy_all<Model, PipelinedChannel<3>>(o, source, steps);
      break;
    default:
      FAIL("no layouts listed for ", hpf_test::world_size(), " ranks");
  }
}

TEST_CASE("Layer splits: Dense pairs (Megatron's column- and row-parallel layers), bit for bit as one process") {
  // The pair keeps each member's hidden features (the others' are zeros) across the elementwise
  // layers, and the stage boundary after it.
  using Paired = hpf::Sequential<hpf::Input<1, 8, 8>, hpf::Flatten,
                                 hpf::DensePair<hpf::Dense<48>, hpf::ReLU, hpf::Dropout<10>, hpf::Dense<30>>, hpf::GELU,
                                 hpf::Dense<10>, hpf::SoftmaxCrossEntropy>;
  static_assert(Paired::leaves == 8);  // the pair counts its 4 layers: cuts fall around it
  const auto paired_source = hpf_test::synthetic_source<Paired>(24 * 6 + 5);
  const auto o = options();
  switch (hpf_test::world_size()) {
    case 1:
      hpf_test::check_strategy_all<Paired, Filtered<1>>(o, paired_source, steps);
      break;
    case 2:
      hpf_test::check_strategy_all<Paired, Filtered<2>>(o, paired_source, steps);
      hpf_test::check_strategy_all<Paired, Channeled<2>>(o, paired_source, steps);
      break;
    case 4:
      hpf_test::check_strategy_all<Paired, Filtered<4>>(o, paired_source, steps);
      hpf_test::check_strategy_all<Paired, hpf::Pipeline<hpf::Cuts<5>, hpf::Channel<2>>>(o, paired_source, steps);
      break;
    case 6:
      hpf_test::check_strategy_all<Paired, Filtered<3>>(o, paired_source, steps);
      hpf_test::check_strategy_all<Paired, hpf::Pipeline<hpf::Cuts<5>, hpf::Filter<3>>>(o, paired_source, steps);
      break;
    default:
      FAIL("no layouts listed for ", hpf_test::world_size(), " ranks");
  }
}

TEST_CASE("Layer splits: a CNN's convolutions and Dense head split around whole BatchNorm, bit for bit as one process") {
  // Every member holds each split layer's whole output, so BatchNorm, pooling and ReLU run whole
  // on each (the same running statistics on every member).
  using Cnn = hpf::Sequential<hpf::Input<1, 8, 8>, hpf::Conv2D<4, 3, hpf::Pad<1>>, hpf::BatchNorm, hpf::ReLU,
                              hpf::MaxPool<2>, hpf::Conv2D<6, 3, hpf::Stride<2>>, hpf::ReLU, hpf::Flatten, hpf::Dense<16>,
                              hpf::ReLU, hpf::Dense<10>, hpf::SoftmaxCrossEntropy>;
  const auto cnn_source = hpf_test::synthetic_source<Cnn>(24 * 4 + 5);
  const auto o = options();
  switch (hpf_test::world_size()) {
    case 4:  // the convolutions and the head on stages of their own, each split over 2 ranks
      hpf_test::check_strategy_all<Cnn, hpf::Pipeline<hpf::Cuts<7>, hpf::Channel<2>>>(o, cnn_source, 5);
      [[fallthrough]];
    case 2:
      hpf_test::check_strategy_all<Cnn, Filtered<2>>(o, cnn_source, 5);
      hpf_test::check_strategy_all<Cnn, Channeled<2>>(o, cnn_source, 5);
      break;
    case 6:
      hpf_test::check_strategy_all<Cnn, Filtered<3>>(o, cnn_source, 5);
      hpf_test::check_strategy_all<Cnn, Channeled<2>>(o, cnn_source, 5);
      break;
    default:
      hpf_test::check_strategy_all<Cnn, Channeled<1>>(o, cnn_source, 5);
  }
}

TEST_CASE("Layer splits: a ResNet's convolutions, projection shortcut included, bit for bit as one process") {
  using ResNet = hpf::Sequential<hpf::Input<3, 8, 8>, hpf::Conv2D<4, 3, hpf::Pad<1>, hpf::NoBias>, hpf::BatchNorm,
                                 hpf::ReLU, hpf::zoo::BasicBlock<4>,
                                 hpf::zoo::BasicBlock<6, 2, false, hpf::zoo::Shortcut::projection>, hpf::GlobalAvgPool,
                                 hpf::Dense<10>, hpf::SoftmaxCrossEntropy>;
  const auto resnet_source = hpf_test::synthetic_source<ResNet>(24 * 3 + 5);
  const auto o = options();
  if (hpf_test::world_size() % 2 != 0) {
    hpf_test::check_strategy_all<ResNet, Filtered<1>>(o, resnet_source, 4);
    return;
  }
  hpf_test::check_strategy_all<ResNet, Filtered<2>>(o, resnet_source, 4);
  hpf_test::check_strategy_all<ResNet, Channeled<2>>(o, resnet_source, 4);
  if (hpf_test::world_size() == 4) {
    hpf_test::check_strategy_all<ResNet, hpf::Pipeline<hpf::Balanced<2>, hpf::Filter<2>>>(o, resnet_source, 4);
  }
}

TEST_CASE("Layer splits: a 3-D CNN's volume convolutions split, bit for bit as one process") {
  using Volumes = hpf::Sequential<hpf::Input<2, 6, 6, 6>, hpf::Conv3D<4, 3, hpf::Pad<1>>, hpf::ReLU, hpf::MaxPool3D<2>,
                                  hpf::Conv3D<6, 3>, hpf::ReLU, hpf::Flatten, hpf::Dense<10>, hpf::SoftmaxCrossEntropy>;
  const auto volume_source = hpf_test::synthetic_source<Volumes>(24 * 3 + 5);
  const auto o = options();
  if (hpf_test::world_size() % 2 != 0) {
    hpf_test::check_strategy_all<Volumes, Channeled<1>>(o, volume_source, 4);
    return;
  }
  hpf_test::check_strategy_all<Volumes, Filtered<2>>(o, volume_source, 4);
  hpf_test::check_strategy_all<Volumes, Channeled<2>>(o, volume_source, 4);
}

TEST_CASE("Layer splits: mixed precision and two shards per replica train bit for bit as one process") {
  auto o = options();
  o.shards_per_replica = 2;
  o.reduction = hpf::GradientReduction::ordered;
  if (hpf_test::world_size() % 2 != 0) {
    hpf_test::check_strategy<Model, Filtered<1>, hpf::Mixed<hpf::bf16>>(o, source, {steps, 0});
    return;
  }
  hpf_test::check_strategy<Model, Filtered<2>, hpf::Mixed<hpf::bf16>>(o, source, {steps, 0});
  hpf_test::check_strategy<Model, Channeled<2>, hpf::Mixed<hpf::bf16>>(o, source, {steps, 0});
}

TEST_CASE("Layer splits: a world the groups do not divide, and a split in the options, are refused on every rank") {
  hpf::comm::Communicator world;
  const auto o = options();
  if (world.size() % 4 != 0) {
    const auto in_groups_of_4 = [&] { hpf::fit<Model, Filtered<4>>(world, o, source); };
    CHECK_THROWS_WITH_AS(in_groups_of_4(), doctest::Contains("split over groups of 4"), hpf::comm::UsageError);
  }
  auto given = o;
  given.network.split = hpf::LayerSplit::channel(2);
  const auto split_in_options = [&] { hpf::fit<Model, hpf::DataParallel>(world, given, source); };
  CHECK_THROWS_WITH_AS(split_in_options(), doctest::Contains("hpf::fit splits layers as its strategy says"),
                       hpf::comm::UsageError);
}

TEST_CASE("Layer splits: the log names the split; the timeline shows each split layer's collectives as their own rows") {
  hpf::comm::Communicator world;
  const std::string path = "hpf_test_split_timeline.json";
  if (world.rank() == 0) std::remove(path.c_str());
  std::ostringstream log;
  auto traced = options();
  traced.progress = hpf::ProgressMode::none;
  traced.log = &log;
  traced.trace.path = path;
  traced.trace.first_step = 1;
  traced.trace.last_step = 1;
  // Every rank's count of the group row's spans of step 1 named `name`, each carrying bytes.
  const auto check_spans = [&](const std::string& name, std::size_t expected) {
    world.barrier();
    const auto trace = hpf_test::read_trace(path);
    REQUIRE(trace.processes.size() == static_cast<std::size_t>(world.size()));
    for (const auto& [pid, p] : trace.processes) {
      INFO("rank ", pid, ", ", name);
      const auto spans = trace.select(pid, "group", name, 1);
      CHECK(spans.size() == expected);
      for (const auto& span : spans) CHECK(span.bytes > 0);
    }
    world.barrier();
  };
  if (world.size() % 2 != 0) {  // the registered odd world size: a group of one splits nothing
    hpf::fit<Model, Filtered<1>>(world, traced, source);
    check_spans("gather in group", 0);
    check_spans("sum in group", 0);
    CHECK(log.str().find("layer split") == std::string::npos);
  }
  for (const bool filter : {true, false}) {
    if (world.size() % 2 != 0) break;
    INFO(std::string(filter ? "filter" : "channel"));
    log.str("");
    if (filter) {
      hpf::fit<Model, Filtered<2>>(world, traced, source);
    } else {
      hpf::fit<Model, Channeled<2>>(world, traced, source);
    }
    // Three Dense layers, 2 micro-batches: forward gathers (filter) or sums (channel) each output;
    // backward gathers each weight gradient (and a filter split's bias gradient) and the input
    // gradients of the two layers that pass one back (sums for filter, gathers for channel).
    check_spans("gather in group", 2 * (filter ? 3 + 3 + 3 : 3 + 2));
    check_spans("sum in group", 2 * (filter ? 2 : 3));
    if (world.rank() == 0) {
      const std::string line = std::string("hpf: layer split, Dense and convolution layers in ") + (filter ? "filter" : "channel") +
                               " split over 2 ranks: " + std::to_string(world.size() / 2) + " replica(s) x 1 stage(s) x 2 ranks";
      CHECK_MESSAGE(log.str().find(line) != std::string::npos, log.str());
    }
  }
  if (world.rank() == 0) std::remove(path.c_str());
}
