#include <hpf/zoo/models.hpp>

#include <support/equivalence.hpp>

#include <doctest/doctest.h>

namespace {
using Model = hpf::zoo::Cnn;

hpf::TrainOptions options() {
  hpf::TrainOptions o;
  o.batch = 8;
  o.micro_batches = 2;
  o.optimizer = hpf::SgdOptions{.learning_rate = 0.05, .momentum = 0.9};
  o.network.seed = 8;
  o.data_seed = 9;
  return o;
}
const auto source = hpf_test::synthetic_source<Model>(8 * 20 + 5);
}  // namespace

TEST_CASE("CNN: data parallel") { hpf_test::check_strategy_all<Model, hpf::DataParallel>(options(), source, 21); }
TEST_CASE("CNN: two stages, cut after the first pooling") {
  hpf_test::check_strategy_all<Model, hpf::Pipeline<hpf::Cuts<3>>>(options(), source, 21);
}
TEST_CASE("CNN: four stages") { hpf_test::check_strategy_all<Model, hpf::Pipeline<hpf::Cuts<2, 4, 7>>>(options(), source, 21); }
