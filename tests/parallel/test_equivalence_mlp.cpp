#include <hpf/layers/gelu.hpp>
#include <hpf/layers/layer_norm.hpp>
#include <hpf/layers/mean_squared_error.hpp>
#include <hpf/zoo/models.hpp>

#include <support/equivalence.hpp>

#include <doctest/doctest.h>

// Every layout of the world size (1, 2, 4 or 6 ranks) must reproduce single-process training over
// the same pieces bit for bit: 24 * 10 + 7 samples give 11 steps, the last one short (which also
// leaves micro-batches empty on some replicas).
namespace {
using Model = hpf::zoo::Mlp;  // leaves: Flatten, Dense, ReLU, Dense, ReLU, Dense, loss

hpf::TrainOptions options() {
  hpf::TrainOptions o;
  o.batch = 24;
  o.micro_batches = 2;
  o.optimizer = hpf::SgdOptions{.learning_rate = 0.05, .momentum = 0.9, .weight_decay = 1e-4};
  o.network.seed = 3;
  o.data_seed = 4;
  o.bucket_bytes = 64 << 10;  // several buckets for the 670k parameters
  return o;
}
const auto source = hpf_test::synthetic_source<Model>(24 * 10 + 7);
constexpr std::size_t steps = 11;
}  // namespace

TEST_CASE("MLP: every layout of the world size trains bit for bit as one process") {
  hpf_test::check_every_layout<Model, hpf::Pipeline<hpf::Cuts<3>>, hpf::Pipeline<hpf::Balanced<3>>,
                               hpf::Pipeline<hpf::Balanced<4>>>(options(), source, steps);
}
TEST_CASE("MLP: messages in pieces, as between hosts, train bit for bit as one process") {
  auto o = options();
  o.exchange_piece_bytes = 3000;  // gradient buckets and stage messages in several pieces each
  o.pieces_on_one_host = true;
  hpf_test::check_every_layout<Model, hpf::Pipeline<hpf::Cuts<3>>, hpf::Pipeline<hpf::Balanced<3>>,
                               hpf::Pipeline<hpf::Balanced<4>>>(o, source, steps);
}
TEST_CASE("MLP: gradients summed per host first (here one host of all replicas) train bit for bit as one process") {
  auto o = options();
  o.hierarchy = hpf::HostHierarchy::on;
  hpf_test::check_every_layout<Model, hpf::Pipeline<hpf::Cuts<3>>, hpf::Pipeline<hpf::Balanced<3>>,
                               hpf::Pipeline<hpf::Balanced<4>>>(o, source, steps);
}
TEST_CASE("MLP: gradients exchanged as bf16 train bit for bit as one process, per host first or not") {
  auto o = options();
  o.exchange_precision = hpf::ExchangePrecision::bf16;
  for (const auto hierarchy : {hpf::HostHierarchy::off, hpf::HostHierarchy::on}) {
    o.hierarchy = hierarchy;
    hpf_test::check_every_layout<Model, hpf::Pipeline<hpf::Cuts<3>>, hpf::Pipeline<hpf::Balanced<3>>,
                                 hpf::Pipeline<hpf::Balanced<4>>>(o, source, steps, hpf_test::Precisions<float>{});
  }
}
TEST_CASE("MLP: a bf16 gradient exchange needs float gradients and the ordered reduction, said before training") {
  auto o = options();
  o.exchange_precision = hpf::ExchangePrecision::bf16;
  o.data_shards = 2;
  const hpf::data::TrainTest data = source(hpf::data::Shard{});
  using InDouble = hpf::Trainer<Model, double>;
  CHECK_THROWS_WITH_AS(InDouble(o, data.train), doctest::Contains("needs float gradients"), std::invalid_argument);
  o.reduction = hpf::GradientReduction::allreduce;
  using InFloat = hpf::Trainer<Model>;
  CHECK_THROWS_WITH_AS(InFloat(o, data.train), doctest::Contains("needs the ordered gradient reduction"),
                       std::invalid_argument);
}
TEST_CASE("MLP: data parallel through MPI_Iallreduce (summation order of the MPI library)") {
  auto o = options();
  o.reduction = hpf::GradientReduction::allreduce;
  hpf_test::check_strategy<Model, hpf::DataParallel, double>(o, source, {steps, 1e-9});
  hpf_test::check_strategy<Model, hpf::DataParallel, float>(o, source, {steps, 1e-4});
}

// A regression model (mean squared error against real targets) through the same engine, with a
// transformer's LayerNorm and GELUs: per-sample statistics keep every layout bitwise equal.
namespace {
using Regressor = hpf::Sequential<hpf::Input<2, 6, 6>, hpf::Flatten, hpf::Dense<32>, hpf::LayerNorm, hpf::GELU,
                                  hpf::Dense<16>, hpf::GELUTanh, hpf::Dense<3>, hpf::MeanSquaredError>;
const auto regression_source = hpf_test::synthetic_regression_source<Regressor>(24 * 10 + 7);
}  // namespace

TEST_CASE("Regression MLP with LayerNorm and GELU: data parallel and two stages train bit for bit as one process") {
  hpf_test::check_strategy_all<Regressor, hpf::DataParallel>(options(), regression_source, steps);
  if (hpf_test::world_size() % 2 == 0) {
    hpf_test::check_strategy_all<Regressor, hpf::Pipeline<hpf::Cuts<3>>>(options(), regression_source, steps);
  } else {
    CHECK(hpf_test::world_size() == 1);  // the registered odd world size: no pipeline of 2 fits
  }
}
