#include <hpf/zoo/models.hpp>

#include <support/equivalence.hpp>

#include <doctest/doctest.h>

// Every layout of the world size (1, 2, 4 or 6 ranks) trains the CNN bit for bit as one process.
namespace {
using Model = hpf::zoo::Cnn;

hpf::TrainOptions options() {
  hpf::TrainOptions o;
  o.batch = 24;
  o.micro_batches = 2;
  o.optimizer = hpf::SgdOptions{.learning_rate = 0.05, .momentum = 0.9};
  o.network.seed = 8;
  o.data_seed = 9;
  return o;
}
const auto source = hpf_test::synthetic_source<Model>(24 * 8 + 5);
constexpr std::size_t steps = 9;

void data_parallel() { hpf_test::check_strategy_all<Model, hpf::DataParallel>(options(), source, steps); }
// Two stages, cut after the first pooling.
void two_stages() { hpf_test::check_strategy_all<Model, hpf::Pipeline<hpf::Cuts<3>>>(options(), source, steps); }
void three_stages() { hpf_test::check_strategy_all<Model, hpf::Pipeline<hpf::Cuts<3, 7>>>(options(), source, steps); }
void four_stages() { hpf_test::check_strategy_all<Model, hpf::Pipeline<hpf::Cuts<2, 4, 7>>>(options(), source, steps); }
}  // namespace

TEST_CASE("CNN: every layout of the world size trains bit for bit as one process") {
  switch (hpf_test::world_size()) {
    case 1: data_parallel(); break;
    case 2: data_parallel(); two_stages(); break;
    case 4: data_parallel(); two_stages(); four_stages(); break;
    case 6: data_parallel(); two_stages(); three_stages(); break;
    default: FAIL("no layouts listed for ", hpf_test::world_size(), " ranks");
  }
}
