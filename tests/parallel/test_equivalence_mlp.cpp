#include <hpf/zoo/models.hpp>

#include <support/equivalence.hpp>

#include <doctest/doctest.h>

// Every strategy that fits the world size (1, 2 or 4 ranks) must reproduce single-process
// training over the same pieces: 16 * 20 + 7 samples give 21 steps, the last one short (which
// also leaves micro-batches empty on some replicas).
namespace {
using Model = hpf::zoo::Mlp;  // leaves: Flatten, Dense, ReLU, Dense, ReLU, Dense, loss

hpf::TrainOptions options() {
  hpf::TrainOptions o;
  o.batch = 16;
  o.micro_batches = 2;
  o.optimizer = hpf::SgdOptions{.learning_rate = 0.05, .momentum = 0.9, .weight_decay = 1e-4};
  o.network.seed = 3;
  o.data_seed = 4;
  o.bucket_bytes = 64 << 10;  // several buckets for the 670k parameters
  return o;
}
const auto source = hpf_test::synthetic_source<Model>(16 * 20 + 7);
}  // namespace

TEST_CASE("MLP: data parallel") { hpf_test::check_strategy_all<Model, hpf::DataParallel>(options(), source, 21); }
TEST_CASE("MLP: data parallel through MPI_Iallreduce (summation order of the MPI library)") {
  auto o = options();
  o.reduction = hpf::GradientReduction::allreduce;
  hpf_test::check_strategy<Model, hpf::DataParallel, double>(o, source, 1e-9, 21);
  hpf_test::check_strategy<Model, hpf::DataParallel, float>(o, source, 1e-4, 21);
}
TEST_CASE("MLP: two stages (model parallel on 2 ranks, hybrid 2x2 on 4)") {
  hpf_test::check_strategy_all<Model, hpf::Pipeline<hpf::Cuts<3>>>(options(), source, 21);
}
TEST_CASE("MLP: four stages") { hpf_test::check_strategy_all<Model, hpf::Pipeline<hpf::Balanced<4>>>(options(), source, 21); }
