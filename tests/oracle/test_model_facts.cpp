// SPDX-License-Identifier: MIT
// The oracle's compile-time facts against numbers worked out by hand for a small model, and
// against the partition's own stages for the zoo's models.
#include <hpf/hpf.hpp>
#include <hpf/oracle/memory.hpp>
#include <hpf/oracle/model_facts.hpp>
#include <hpf/parallel/schedule.hpp>
#include <hpf/zoo/models.hpp>

#include <doctest/doctest.h>

#include <span>

namespace {

using namespace hpf;
using oracle::stage_facts_v;

// Leaves: 0 conv, 1 relu, 2 max pool, 3 flatten, 4 dense, 5 loss.
using Tiny = Sequential<Input<1, 4, 4>, Conv2D<2, 3, Pad<1>>, ReLU, MaxPool<2>, Flatten, Dense<3>, SoftmaxCrossEntropy>;

// By hand. Conv 1 -> 2, 3x3, pad 1 on 4x4 (patch 9, 16 outputs per channel): 2*9 + 2 = 20
// parameters, forward 2*2*9*16 + 2*16 = 608 FLOPs, backward 4*2*9*16 + 2*16 = 1184, output 32.
// ReLU: 32 / 32 FLOPs, output 32 (in place over the conv's output). MaxPool 2x2: 8 outputs,
// forward 8*4 = 32, backward 32*4 = 128, and 8 argmax indices. Flatten: 8, no work. Dense 8 -> 3:
// 27 parameters, forward 2*3*8 + 3 = 51, backward 4*3*8 + 3 = 99, output 3. Loss on 3: forward
// 4*3 = 12, backward 2*3 = 6, output 3 and the sample's loss.
constexpr auto tiny_units = oracle::model_facts<Tiny>::units;
static_assert(tiny_units.size() == 6);
static_assert(tiny_units[0].cost.parameters == 20 && tiny_units[0].cost.forward_flops == 608 &&
              tiny_units[0].cost.backward_flops == 1184 && tiny_units[0].output_elements == 32);
static_assert(tiny_units[2].cost.saved_indices == 8 && tiny_units[2].cost.backward_flops == 128);
static_assert(tiny_units[4].cost.parameters == 27 && tiny_units[4].input_elements == 8);

// One stage: everything; the chain runs the ReLU in place, so the tape keeps 32 + 8 + 8 + 3 + 4.
constexpr oracle::StageFacts whole = stage_facts_v<Tiny, Cuts<>>[0];
static_assert(whole.cost.parameters == 47 && whole.cost.forward_flops == 735 && whole.cost.backward_flops == 1449);
static_assert(whole.cost.activations == 55 && whole.input_elements == 16 && whole.output_elements == 3);
static_assert(whole.cost == Tiny::cost);

// Two stages at leaf 3: [conv, relu, pool] sends 8 values per sample; [flatten, dense, loss].
constexpr auto two = stage_facts_v<Tiny, Cuts<3>>;
static_assert(two[0].cost.parameters == 20 && two[0].cost.activations == 40 && two[0].output_elements == 8 &&
              two[0].largest_inner_output == 32 && two[0].cost.saved_indices == 8);
static_assert(two[1].cost.parameters == 27 && two[1].cost.activations == 15 && two[1].input_elements == 8 &&
              two[1].largest_inner_output == 8);
static_assert(two[0].cost.parameters + two[1].cost.parameters == Tiny::cost.parameters &&
              two[0].cost.training_flops() + two[1].cost.training_flops() == Tiny::cost.training_flops());

// A stage that ends in the ReLU: the ReLU runs in place on the stage's output, which the conv
// writes, so the tape keeps no buffer for the conv's output.
constexpr auto relu_last = stage_facts_v<Tiny, Cuts<2>>;
static_assert(relu_last[0].cost.activations == 32 && relu_last[0].output_elements == 32);
static_assert(relu_last[0].cost == Stage<Tiny, Cuts<2>, 0>::cost);

// Per-rank memory of 2 stages x 2 replicas, 1F1B, micro-batches of 4 samples, SGD with momentum,
// the ordered reduction (floats). Stage 0 keeps 2 slots: 80 B each of parameters, gradients and
// momentum; tapes 2 * 4 * ((16 + 40) * 4 + 8 * 4 + 8) = 2112 (8: each sample's global index); the
// gradient it receives, 2 * 4 * 8 * 4 = 256; gathered buckets 2 * 20 * 4 = 160; two backward buffers
// of the largest inner output, 2 * 32 * 4 * 4 = 1024. Stage 1 keeps 1 slot with labels: 3 * 108,
// tape 4 * ((8 + 15) * 4 + 4 + 8) = 416, the gradient it sends 8 * 4 * 4 = 128, buckets 216,
// buffers 2 * 8 * 4 * 4 = 256.
constexpr oracle::MemoryInputs stage0_inputs{.slots = slots_needed(Schedule::one_f_one_b, 2, 0, 4), .capacity = 4,
                                             .first = true, .last = false, .replicas = 2, .gathered_copies = 2};
constexpr oracle::MemoryInputs stage1_inputs{.slots = slots_needed(Schedule::one_f_one_b, 2, 1, 4), .capacity = 4,
                                             .first = false, .last = true, .replicas = 2, .gathered_copies = 2};
static_assert(stage0_inputs.slots == 2 && stage1_inputs.slots == 1);
static_assert(oracle::stage_memory(two[0], stage0_inputs).total() == 80 + 80 + 80 + 2112 + 256 + 160 + 1024);
static_assert(oracle::stage_memory(two[1], stage1_inputs).total() == 108 * 3 + 416 + 128 + 216 + 256);
// What calibration measures of the backend (MachineProfile): Kokkos 3.4 counts an empty view as its
// 128-byte header, and Kokkos::Serial's team scratch (11,264 B) is allocated once per process.
// Stage 1 has no BatchNorm buffers: one empty view more. A stage of the loss alone holds four
// empty state views (parameters, gradients, buffers, momentum) and no buckets.
constexpr oracle::MemoryInputs with_backend = [] {
  oracle::MemoryInputs in = stage1_inputs;
  in.runtime_bytes = 11264;
  in.empty_view_bytes = 128;
  return in;
}();
static_assert(oracle::stage_memory(two[1], with_backend).total() == 108 * 3 + 416 + 128 + 216 + 256 + 128 + 11264);
constexpr oracle::StageFacts loss_alone = stage_facts_v<Tiny, Cuts<5>>[1];
constexpr oracle::MemoryBreakdown loss_memory = oracle::stage_memory(loss_alone, with_backend);
static_assert(loss_alone.cost.parameters == 0 && loss_memory.gradient_buckets == 0);
static_assert(loss_memory.parameters + loss_memory.gradients + loss_memory.buffers + loss_memory.optimizer_state == 4 * 128);
// Its tape: 4 samples of (3 inputs + the loss's 3 outputs and 1 loss) floats, a label and a global
// index; it sends 4 * 3 gradient values.
static_assert(loss_memory.total() == 4 * 128 + 4 * ((3 + 4) * 4 + 4 + 8) + 4 * 3 * 4 + 11264);
// GPipe keeps every micro-batch: stage 0 holds 4 slots' tapes and received gradients.
static_assert(oracle::stage_memory(two[0], {.slots = slots_needed(Schedule::gpipe, 2, 0, 4), .capacity = 4,
                                            .first = true, .last = false, .replicas = 2})
                  .activations == 4224);

// What of the two gradient buffers a backward writes, by hand. The whole Tiny, buffers of 32 per
// sample: the pool takes the ReLU's backward and writes the gradient at the conv's output (32) into
// buffer 1, where the flatten's (8) goes too; the loss's (3) and the dense's (8) into buffer 0.
// Cut at 3: the first stage [conv, relu, pool] writes the conv's (32) and never buffer 0; the
// second [flatten, dense, loss], buffers of 8, writes the flatten's (8, the gradient it sends) and
// the dense's (3). Cut at 2: [conv, relu] writes the conv's gradient (32) through the ReLU.
// Allocated at 4 samples, 2 * 32 * 4 * 4 = 1024 bytes, of which 32 * 4 * 4 = 512 not resident.
static_assert(oracle::stage_memory(two[0], [] {
                oracle::MemoryInputs in = stage0_inputs;
                in.gradient_buffer_unwritten_elements = (2 * 32 - 32) * 4;
                return in;
              }()).unwritten == 512);

template <class Model, std::size_t S>
void check_stages_match_partition() {
  constexpr auto facts = stage_facts_v<Model, Balanced<S>>;
  for_each_index<S>([&](auto s) {
    using stage = Stage<Model, Balanced<S>, decltype(s)::value>;
    CHECK(facts[s].cost == stage::cost);
    CHECK(facts[s].input_elements == stage::input_shape::size);
    CHECK(facts[s].output_elements == stage::output_shape::size);
  });
  const std::vector<std::size_t> bounds = oracle::balanced_bounds<Model>(S);
  constexpr auto expected = stage_bounds_v<Model, Balanced<S>>;
  CHECK(std::equal(bounds.begin(), bounds.end(), expected.begin(), expected.end()));
}

}  // namespace

TEST_CASE("stage facts from the unit table equal the partition's stages, and run-time balanced cuts the compiled ones") {
  check_stages_match_partition<zoo::Cnn, 2>();
  check_stages_match_partition<zoo::Cnn, 4>();
  check_stages_match_partition<zoo::Mlp, 3>();
  check_stages_match_partition<zoo::ResNet20, 2>();
  check_stages_match_partition<zoo::ResNet20, 4>();
  check_stages_match_partition<zoo::PreActResNet164, 3>();
}

TEST_CASE("the gradient buffers a stage's backward writes: a pool that takes the ReLU's backward leaves one short") {
  const std::span<const oracle::UnitFacts> units = tiny_units;
  CHECK(oracle::stage_gradient_buffers_written(units, 0, 6, true, true) == 32 + 8);
  CHECK(oracle::stage_gradient_buffers_written(units, 0, 3, true, false) == 32);
  CHECK(oracle::stage_gradient_buffers_written(units, 3, 6, false, true) == 8 + 3);
  CHECK(oracle::stage_gradient_buffers_written(units, 0, 2, true, false) == 32);
  // The chain's own roles agree: the pool's input gradient and the conv's output gradient share
  // buffer 1 (the ReLU passes it on).
  using facts = hpf::detail::chain_facts<Tiny::bound_layers>;
  static_assert(facts::roles[2].applies_previous_relu_backward && facts::roles[2].applies_previous_relu_forward);
  static_assert(facts::roles[0].gradient_buffer == 1 && facts::roles[1].gradient_buffer == 1);
  static_assert(hpf::detail::gradient_buffers_written(facts::children.data(), facts::roles.data(), facts::count, false) ==
                std::array<std::size_t, 2>{8, 32});
}

TEST_CASE("a Repeat is one unit per copy: ResNet-1001's table has a row per block") {
  using M = zoo::PreActResNet1001;
  constexpr auto& units = oracle::model_facts<M>::units;
  std::size_t parameters = 0;
  for (const auto& u : units) parameters += u.cost.parameters;
  CHECK(parameters == M::cost.parameters);
  CHECK(units.size() > 333);  // 3 x 111 bottleneck blocks and the layers around them
  CHECK(oracle::cut_places_v<M> == detail::layer_positions<M>::units.size);
}

namespace {

// Every leaf range [begin, end) of Model, as a last stage and as another: the run of units
// stage_units finds by bisection holds exactly the units in_stage admits.
template <class Model>
void check_stage_units() {
  constexpr auto& units = oracle::model_facts<Model>::units;
  const std::span<const oracle::UnitFacts> all(units.data(), units.size());
  std::size_t wrong = 0, stages = 0;
  for (std::size_t begin = 0; begin <= Model::leaves; ++begin) {
    for (std::size_t end = begin; end <= Model::leaves; ++end) {
      for (const bool last : {false, true}) {
        const std::span<const oracle::UnitFacts> found = oracle::detail::stage_units(all, begin, end, last);
        std::size_t admitted = 0;
        for (const oracle::UnitFacts& u : all) admitted += oracle::in_stage(u, begin, end, last) ? 1 : 0;
        bool same = found.size() == admitted;
        for (const oracle::UnitFacts& u : found) same = same && oracle::in_stage(u, begin, end, last);
        wrong += same ? 0 : 1;
        stages += admitted > 0 ? 1 : 0;
      }
    }
  }
  CHECK(wrong == 0);
  CHECK(stages > Model::leaves);  // the ranges tried hold units
}

}  // namespace

TEST_CASE("a stage's units are the run in_stage admits, leafless layers and Repeat copies among them") {
  using WithIdentities = Sequential<Input<1, 4, 4>, Identity, Conv2D<2, 3, Pad<1>>, Identity, ReLU, Identity, Flatten,
                                    Dense<3>, Identity, SoftmaxCrossEntropy>;
  check_stage_units<WithIdentities>();
  check_stage_units<zoo::ResNet20>();
}
