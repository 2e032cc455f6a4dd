// Activations and their gradients as bf16 between pipeline stages (StepOptions::stage_precision):
// every layout trains the bits of one process whose model rounds at the same cuts
// (hpf_test::RoundToBf16 there), and differs from float messages.
#include <hpf/layers/conv2d.hpp>
#include <hpf/layers/max_pool.hpp>
#include <hpf/zoo/models.hpp>

#include <support/equivalence.hpp>
#include <support/round_to_bf16.hpp>
#include <support/trace_file.hpp>

#include <doctest/doctest.h>

#include <sstream>
#include <string>

namespace {
using hpf::Conv2D;
using hpf::Dense;
using hpf::Flatten;
using hpf::Input;
using hpf::MaxPool;
using hpf::Pad;
using hpf::ReLU;
using hpf::Sequential;
using hpf::SoftmaxCrossEntropy;
using Round = hpf_test::RoundToBf16;

// Leaves: Flatten, Dense, ReLU | Dense, ReLU | Dense, loss (cuts at 3 and 5).
using Mlp = Sequential<Input<1, 6, 6>, Flatten, Dense<32>, ReLU, Dense<16>, ReLU, Dense<10>, SoftmaxCrossEntropy>;
using MlpRoundedAt3 = Sequential<Input<1, 6, 6>, Flatten, Dense<32>, ReLU, Round, Dense<16>, ReLU, Dense<10>, SoftmaxCrossEntropy>;
using MlpRoundedAt3And5 =
    Sequential<Input<1, 6, 6>, Flatten, Dense<32>, ReLU, Round, Dense<16>, ReLU, Round, Dense<10>, SoftmaxCrossEntropy>;
// Leaves: Conv2D, ReLU, MaxPool | Conv2D, ReLU, Flatten | Dense, loss (cuts at 3 and 6): images
// cross the first cut, features the second.
using Cnn = Sequential<Input<1, 8, 8>, Conv2D<4, 3, Pad<1>>, ReLU, MaxPool<2>, Conv2D<6, 3, Pad<1>>, ReLU, Flatten,
                       Dense<10>, SoftmaxCrossEntropy>;
using CnnRoundedAt3 = Sequential<Input<1, 8, 8>, Conv2D<4, 3, Pad<1>>, ReLU, MaxPool<2>, Round, Conv2D<6, 3, Pad<1>>, ReLU,
                                 Flatten, Dense<10>, SoftmaxCrossEntropy>;
using CnnRoundedAt3And6 = Sequential<Input<1, 8, 8>, Conv2D<4, 3, Pad<1>>, ReLU, MaxPool<2>, Round, Conv2D<6, 3, Pad<1>>,
                                     ReLU, Flatten, Round, Dense<10>, SoftmaxCrossEntropy>;
static_assert(Mlp::cost.parameters == MlpRoundedAt3And5::cost.parameters && Cnn::cost.parameters == CnnRoundedAt3And6::cost.parameters);

constexpr std::size_t steps = 7;  // 24 * 6 + 7 samples: the last step short

hpf::TrainOptions options() {
  hpf::TrainOptions o = hpf_test::cnn_options();  // batch 24 in 2 micro-batches, SGD with momentum
  o.reduction = hpf::GradientReduction::ordered;
  o.stage_precision = hpf::ExchangePrecision::bf16;
  return o;
}

/// Starts the single-process trainer of a rounded model from Model's initial weights (a rounding
/// layer has none, so both lay their parameters out alike).
template <class Model>
auto from_weights_of(const hpf::NetworkOptions& network) {
  return [network](auto& trainer) {
    const hpf::Network<Model, float> model(network);
    REQUIRE(trainer.network().parameters().size() == model.parameters().size());
    Kokkos::deep_copy(trainer.network().parameters(), model.parameters());
  };
}

/// Strategy with bf16 messages between stages, both schedules, trains the bits of Rounded on one
/// process; with float messages it does not.
template <class Model, class Rounded, class Strategy>
void check_rounded_at_cuts(hpf::TrainOptions o) {
  const hpf::comm::Communicator world;
  const auto source = hpf_test::synthetic_source<Model>(24 * 6 + 7);
  const auto reference = hpf_test::single_process_reference<Rounded, float>(
      world, hpf_test::reference_options<Model, Strategy>(o), source, hpf_test::replicas_of<Model, Strategy>(world),
      from_weights_of<Model>(o.network));
  for (const auto schedule : {hpf::Schedule::gpipe, hpf::Schedule::one_f_one_b}) {
    o.schedule = schedule;
    hpf_test::check_strategy<Model, Strategy, float>(o, source, {steps, 0}, &reference);
  }
  o.stage_precision = hpf::ExchangePrecision::full;
  const auto in_float = hpf_test::compare_with_single_process<Model, Strategy, float>(world, o, source, &reference);
  CHECK(in_float.steps == steps);
  CHECK(in_float.different_values > 0);  // the rounding at the cuts is what the reference has
}

/// One rank holds no pipeline: there the reference that rounds at the cut differs from training
/// without cuts (the rounding layer does round).
template <class Model, class Rounded>
void check_reference_rounds(const hpf::TrainOptions& o) {
  const hpf::comm::Communicator world;
  const auto source = hpf_test::synthetic_source<Model>(24 * 6 + 7);
  const auto reference =
      hpf_test::single_process_reference<Rounded, float>(world, o, source, 1, from_weights_of<Model>(o.network));
  const auto unrounded = hpf_test::compare_with_single_process<Model, hpf::DataParallel, float>(world, o, source, &reference);
  CHECK(unrounded.steps == steps);
  CHECK(unrounded.different_values > 0);
}

/// The layouts of the world size: 2 stages on 2, 4 and 6 ranks (x1, x2, x3 replicas), 3 stages on 6.
template <class Model, class RoundedOnce, class RoundedTwice, std::size_t Cut, std::size_t SecondCut>
void check_layouts(const hpf::TrainOptions& o) {
  const std::size_t size = hpf_test::world_size();
  if (size == 1) check_reference_rounds<Model, RoundedOnce>(o);
  if (size % 2 == 0) check_rounded_at_cuts<Model, RoundedOnce, hpf::Pipeline<hpf::Cuts<Cut>>>(o);
  if (size == 6) check_rounded_at_cuts<Model, RoundedTwice, hpf::Pipeline<hpf::Cuts<Cut, SecondCut>>>(o);
}
}  // namespace

TEST_CASE("bf16 between stages: every pipeline trains the bits of one process rounding at its cuts (MLP)") {
  check_layouts<Mlp, MlpRoundedAt3, MlpRoundedAt3And5, 3, 5>(options());
}
TEST_CASE("bf16 between stages: images and features crossing the cuts (CNN)") {
  check_layouts<Cnn, CnnRoundedAt3, CnnRoundedAt3And6, 3, 6>(options());
}
TEST_CASE("bf16 between stages: in pieces, as between hosts, and with gradients exchanged as bf16") {
  auto o = options();
  o.exchange_piece_bytes = 300;  // 150 bf16 values per piece: several pieces per message
  o.pieces_on_one_host = true;
  o.exchange_precision = hpf::ExchangePrecision::bf16;
  check_layouts<Mlp, MlpRoundedAt3, MlpRoundedAt3And5, 3, 5>(o);
}
TEST_CASE("bf16 between stages: with one stage nothing travels and nothing is rounded") {
  // Data parallel with the option trains the bits of one process without it.
  hpf_test::check_strategy_all<Mlp, hpf::DataParallel>(options(), hpf_test::synthetic_source<Mlp>(24 * 6 + 7), steps,
                                                       hpf_test::Precisions<float>{});
}
TEST_CASE("bf16 between stages: the log says so and the timeline's messages carry half the bytes") {
  const hpf::comm::Communicator world;
  const bool pipelined = world.size() % 2 == 0;  // 2 stages; on 1 rank data parallel, where nothing travels
  // Bytes of every traced send between stages, and rank 0's log.
  const auto traced = [&](hpf::ExchangePrecision precision) {
    hpf::TrainOptions o = options();
    o.stage_precision = precision;
    o.evaluate = false;
    o.progress = hpf::ProgressMode::none;
    o.steps_per_epoch = 2;
    const std::string path = "hpf_test_stage_precision_" + std::to_string(world.size()) + ".json";
    o.trace = {.path = path, .first_step = 0, .last_step = 1};
    std::ostringstream log;
    o.log = world.rank() == 0 ? &log : nullptr;
    const auto source = hpf_test::synthetic_source<Mlp>(96);
    if (pipelined) {
      hpf::fit<Mlp, hpf::Pipeline<hpf::Cuts<3>>>(world, o, source);
    } else {
      hpf::fit<Mlp, hpf::DataParallel>(world, o, source);
    }
    world.barrier();
    long long bytes = 0;
    for (const auto& s : hpf_test::read_trace(path).spans) {
      if (s.cat == "send" && (s.name == "send activation" || s.name == "send gradient")) bytes += s.bytes;
    }
    return std::pair{bytes, log.str()};
  };
  const auto [in_float, float_log] = traced(hpf::ExchangePrecision::full);
  const auto [in_bf16, bf16_log] = traced(hpf::ExchangePrecision::bf16);
  CHECK((in_float > 0) == pipelined);
  CHECK(2 * in_bf16 == in_float);
  if (world.rank() == 0) {
    INFO(bf16_log);
    CHECK((bf16_log.find("hpf: between stages, activations and their gradients travel as bf16") != std::string::npos) == pipelined);
    CHECK(float_log.find("hpf: between stages") == std::string::npos);
  }
}
TEST_CASE("bf16 between stages needs float activations, said before training") {
  const auto source = hpf_test::synthetic_source<Mlp>(48);
  const hpf::data::TrainTest data = source(hpf::data::Shard{});
  using InDouble = hpf::Trainer<Mlp, double>;
  CHECK_THROWS_WITH_AS(InDouble(options(), data.train), doctest::Contains("stage_precision bf16 needs float activations"),
                       std::invalid_argument);
  if (hpf_test::world_size() % 2 == 0) {
    const hpf::comm::Communicator world;
    CHECK_THROWS_WITH_AS((hpf::fit<Mlp, hpf::Pipeline<hpf::Cuts<3>>, double>(world, options(), source)),
                         doctest::Contains("stage_precision bf16 needs float activations"), hpf::comm::UsageError);
  }
}
